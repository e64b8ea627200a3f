package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/keelrun/keel/internal/api"
	"github.com/keelrun/keel/internal/client"
)

// runWorkspace reads the run's workspace versions for show. A run without
// a workspace, or a server without the endpoint (older), gives none: the
// workspace is an extra of show, never a reason for it to fail.
func runWorkspace(ctx context.Context, cl *client.Client, runID string) []api.WorkspaceVersion {
	vs, err := cl.Workspace(ctx, runID)
	if err != nil {
		return nil
	}
	return vs
}

// showWorkspace prints one line per checkpoint that has a workspace
// version: the version (short), its files and bytes. Every value comes
// from the server and may carry a run's text (a run id in the version), so
// each line goes through termSafe like the rest of show.
func showWorkspace(c *cli, runID string, vs []api.WorkspaceVersion) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "\nworkspace:")
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CHECKPOINT\tSEQ\tVERSION\tFILES\tBYTES")
	for _, v := range vs {
		// Each cell is made safe alone: termSafe escapes the tabs that
		// separate them.
		files, bytes := fmt.Sprint(v.Files), fmt.Sprint(v.Bytes)
		if v.Error != "" {
			files, bytes = "unreadable: "+clip(oneLine(v.Error), 120), ""
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", termSafe(clip(v.CheckpointID, 80)), v.Seq,
			termSafe(shortVersion(v.Version, runID)), termSafe(files), bytes)
	}
	tw.Flush()
}

// shortVersion is a version's first 12 hex digits, with the run holding
// its manifest when that is not the run shown (a fork's first versions are
// its parent's). An unparsable version is shown clipped, as it is.
func shortVersion(v, runID string) string {
	rest, ok := strings.CutPrefix(v, "sha256:")
	hexPart, owner, found := strings.Cut(rest, "@")
	if !ok || !found || len(hexPart) < 12 {
		return clip(v, 40)
	}
	if owner != runID {
		return hexPart[:12] + "@" + clip(owner, 60)
	}
	return hexPart[:12]
}
