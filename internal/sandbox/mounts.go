package sandbox

// WorkspacePath is where a command sees its workspace.
const WorkspacePath = "/workspace"

// etcFiles are the parts of /etc programs need to start and name users;
// etcNet is added when AllowHosts is set, for programs that read them even
// when a proxy resolves names.
var (
	etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/ssl/certs", "/etc/ca-certificates"}
	etcNet = []string{"/etc/hosts", "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf"}
)

// mounts is bwrap's argument list up to the workspace bind. The network
// namespace is always the command's own (--unshare-all): with AllowHosts
// its way out is the proxy (network.go), never the host's interfaces.
func (s *Sandbox) mounts(network bool) []string {
	a := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
		"--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8",
	}
	etc := etcFiles
	if network {
		etc = append(append([]string{}, etcFiles...), etcNet...)
	}
	for _, p := range etc {
		a = append(a, "--ro-bind-try", p, p)
	}
	return a
}
