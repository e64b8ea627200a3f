package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// No Docker engine runs where the tests run, so the image is never built
// here; this test checks the Dockerfile statically for what the image must
// be: the prebuilt app binary (BuildApp's bootstrap, from the build
// context) and nothing compiled in Docker, on a minimal base, as a numeric
// non-root user, started in exec form.

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

// checkDockerfile lists what is wrong with src.
func checkDockerfile(src string) []string {
	var bad []string
	stages := parseDockerfile(src)
	if len(stages) != 1 {
		return []string{"want a single stage: the binary is built before Docker runs, by BuildApp"}
	}
	final := stages[0]
	base := strings.Fields(final[0].args)
	img := ""
	for _, f := range base {
		if !strings.HasPrefix(f, "--") {
			img = f
			break
		}
	}
	if !minimalBases.MatchString(img) {
		bad = append(bad, "base "+img+" is not scratch or distroless/static")
	}
	var user, entry, copied string
	for _, in := range final {
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "COPY", "ADD":
			f := strings.Fields(in.args)
			if in.op == "ADD" || len(f) != 2 || strings.HasPrefix(f[0], "--") || f[0] != Bootstrap {
				bad = append(bad, in.op+" "+in.args+": want only COPY "+Bootstrap+" <path>, the prebuilt binary from the context")
				continue
			}
			copied = f[1]
		case "RUN":
			bad = append(bad, "RUN "+in.args+": nothing runs in the image build (the binary is prebuilt; distroless has no shell)")
		}
	}
	if copied == "" {
		bad = append(bad, "the prebuilt "+Bootstrap+" is not copied into the image")
	}
	uid, gid, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		bad = append(bad, "USER "+strconv.Quote(user)+" is not a numeric non-root uid")
	}
	if gid != "" {
		if n, err := strconv.Atoi(gid); err != nil || n == 0 {
			bad = append(bad, "USER group "+strconv.Quote(gid)+" is not a numeric non-root gid")
		}
	}
	var argv []string
	if !strings.HasPrefix(entry, "[") || json.Unmarshal([]byte(entry), &argv) != nil || len(argv) == 0 {
		bad = append(bad, "ENTRYPOINT must be exec form (no shell in a minimal image)")
	} else if copied != "" && argv[0] != copied {
		bad = append(bad, "ENTRYPOINT runs "+argv[0]+", not the copied binary "+copied)
	}
	return bad
}

func TestDockerfile(t *testing.T) {
	good := string(taskDockerfile)
	real, err := os.ReadFile(TaskDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if string(real) != good {
		t.Fatal("the embedded Dockerfile is not ./Dockerfile")
	}
	cases := []struct {
		name    string
		src     string
		wantBad string
	}{
		{name: "infra/cdk/Dockerfile", src: good},
		{name: "root user", src: strings.Replace(good, "USER 65532:65532", "USER 0", 1), wantBad: "USER"},
		{name: "named user", src: strings.Replace(good, "USER 65532:65532", "USER nonroot", 1), wantBad: "USER"},
		{name: "no user", src: strings.Replace(good, "USER 65532:65532", "", 1), wantBad: "USER"},
		{name: "fat base", src: strings.Replace(good, "gcr.io/distroless/static-debian12:nonroot", "ubuntu:24.04", 1), wantBad: "base"},
		{name: "shell entrypoint", src: strings.Replace(good, `ENTRYPOINT ["/keel"]`, "ENTRYPOINT /keel", 1), wantBad: "exec form"},
		{name: "entrypoint is not the binary", src: strings.Replace(good, `ENTRYPOINT ["/keel"]`, `ENTRYPOINT ["/keel-task"]`, 1), wantBad: "not the copied binary"},
		{name: "copies something else", src: strings.Replace(good, "COPY bootstrap /keel", "COPY . /keel", 1), wantBad: "prebuilt"},
		{name: "no copy", src: strings.Replace(good, "COPY bootstrap /keel", "", 1), wantBad: "not copied"},
		{name: "runs a command", src: strings.Replace(good, "USER 65532:65532", "RUN chmod 755 /keel\nUSER 65532:65532", 1), wantBad: "RUN"},
		{name: "builds from source", src: "FROM golang:1.26 AS build\nRUN go build -o /out/keel .\n" + strings.Replace(good, "COPY bootstrap /keel", "COPY --from=build /out/keel /keel", 1), wantBad: "single stage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.src == good && tc.wantBad != "" {
				t.Fatal("the edit did not apply: the case tests nothing")
			}
			bad := checkDockerfile(tc.src)
			switch {
			case tc.wantBad == "" && len(bad) > 0:
				t.Fatalf("problems: %v", bad)
			case tc.wantBad != "" && !strings.Contains(strings.Join(bad, "\n"), tc.wantBad):
				t.Fatalf("problems %v, want one about %s", bad, tc.wantBad)
			}
		})
	}
}
