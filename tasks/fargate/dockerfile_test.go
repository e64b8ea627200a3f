package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// No Docker engine runs where the tests run, so the image is never built
// here; this test checks the Dockerfile statically for what the image must
// be: a static binary (CGO_ENABLED=0) built from ./tasks/fargate with the
// Go release go.mod names, on a minimal base, as a numeric non-root user,
// started in exec form.

type instr struct{ op, args string }

// parseDockerfile returns the instructions of each stage, joining
// continuation lines and dropping comments.
func parseDockerfile(src string) [][]instr {
	var stages [][]instr
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		op, args, _ := strings.Cut(line, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], instr{op, strings.TrimSpace(args)})
		}
	}
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		flush()
	}
	flush()
	return stages
}

var minimalBases = regexp.MustCompile(`^(scratch|gcr\.io/distroless/static(-debian\d+)?(:[\w.-]+)?(@sha256:[0-9a-f]{64})?)$`)

// checkDockerfile lists what is wrong with src; goVersion is go.mod's
// "go" line (e.g. 1.26).
func checkDockerfile(src, goVersion string) []string {
	var bad []string
	stages := parseDockerfile(src)
	if len(stages) < 2 {
		return []string{"want a multi-stage build (a Go build stage, then a minimal runtime stage)"}
	}
	final := stages[len(stages)-1]
	base := strings.Fields(final[0].args)
	img := base[0]
	for _, f := range base {
		if !strings.HasPrefix(f, "--") {
			img = f
			break
		}
	}
	if !minimalBases.MatchString(img) {
		bad = append(bad, "final stage base "+img+" is not scratch or distroless/static")
	}
	user := ""
	var entry string
	for _, in := range final {
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		bad = append(bad, "final stage USER "+strconv.Quote(user)+" is not a numeric non-root uid")
	}
	if gid != "" {
		if n, err := strconv.Atoi(gid); err != nil || n == 0 {
			bad = append(bad, "final stage USER group "+strconv.Quote(gid)+" is not a numeric non-root gid")
		}
	}
	if !strings.HasPrefix(entry, "[") {
		bad = append(bad, "ENTRYPOINT must be exec form (no shell in a minimal image)")
	}
	built := false
	for _, st := range stages[:len(stages)-1] {
		for _, in := range st {
			if in.op == "FROM" && strings.Contains(in.args, "golang:") && !strings.Contains(in.args, "golang:"+goVersion) {
				bad = append(bad, "build stage "+in.args+" is not Go "+goVersion+" (go.mod)")
			}
			if in.op == "RUN" && strings.Contains(in.args, "go build") {
				built = true
				if !strings.Contains(in.args, "CGO_ENABLED=0") {
					bad = append(bad, "go build without CGO_ENABLED=0: the binary would need libc")
				}
				if !strings.Contains(in.args, "./tasks/fargate") {
					bad = append(bad, "go build does not build ./tasks/fargate")
				}
			}
		}
	}
	if !built {
		bad = append(bad, "no go build in a build stage")
	}
	return bad
}

func goModVersion(t *testing.T) string {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

func TestDockerfile(t *testing.T) {
	real, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	goVer := goModVersion(t)
	good := string(real)
	cases := []struct {
		name    string
		src     string
		wantBad string
	}{
		{name: "tasks/fargate/Dockerfile", src: good},
		{name: "root user", src: strings.Replace(good, "USER 65532:65532", "USER 0", 1), wantBad: "USER"},
		{name: "named user", src: strings.Replace(good, "USER 65532:65532", "USER nonroot", 1), wantBad: "USER"},
		{name: "no user", src: strings.Replace(good, "USER 65532:65532", "", 1), wantBad: "USER"},
		{name: "cgo on", src: strings.Replace(good, "CGO_ENABLED=0 GOOS", "CGO_ENABLED=1 GOOS", 1), wantBad: "CGO_ENABLED"},
		{name: "fat base", src: strings.Replace(good, "gcr.io/distroless/static-debian12:nonroot", "ubuntu:24.04", 1), wantBad: "base"},
		{name: "shell entrypoint", src: strings.Replace(good, `ENTRYPOINT ["/keel-task"]`, "ENTRYPOINT /keel-task", 1), wantBad: "exec form"},
		{name: "old Go", src: strings.Replace(good, "golang:"+goVer, "golang:1.20", 1), wantBad: "go.mod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.src == good && tc.wantBad != "" {
				t.Fatal("the edit did not apply: the case tests nothing")
			}
			bad := checkDockerfile(tc.src, goVer)
			switch {
			case tc.wantBad == "" && len(bad) > 0:
				t.Fatalf("problems: %v", bad)
			case tc.wantBad != "" && !strings.Contains(strings.Join(bad, "\n"), tc.wantBad):
				t.Fatalf("problems %v, want one about %s", bad, tc.wantBad)
			}
		})
	}
}
