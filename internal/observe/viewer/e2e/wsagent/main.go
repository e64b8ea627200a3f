// Command wsagent is the viewer's browser test's program: keel.Main with
// one agent whose runs have a workspace, and a scripted model that writes
// files into it (one with markup in its name and content, which the page
// must show as text). It runs no command, so it needs no sandbox.
package main

import (
	"context"

	"github.com/keelrun/keel"
)

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

const script = `{"turns":[
 {"text":"writing","tool_calls":[{"name":"write_file","args":{"path":"src/main.go","content":"package main\n"}}]},
 {"text":"writing more","tool_calls":[{"name":"write_file","args":{"path":"src/<img src=x onerror=alert(1)>.txt","content":"<script>alert(1)</script>"}}]},
 {"text":"reporting","tool_calls":[{"name":"write_file","args":{"path":"out/report.txt","content":"all tests pass\n"}}]}
],"final":"done"}`

func main() {
	keel.Main(keel.Agent{
		Name:  "coder",
		Model: keel.ScriptedModel([]byte(script)),
		Tools: []keel.Tool{
			keel.ReadOnly("write_file", "write a file of the workspace", func(ctx context.Context, a writeArgs) (string, error) {
				w, err := keel.RunWorkspace(ctx)
				if err != nil {
					return "", err
				}
				return "written", w.WriteFile(a.Path, []byte(a.Content), 0o644)
			}),
		},
		Workspace: &keel.WorkspaceConfig{},
	})
}
