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

// fileCommand prints one file of a run's workspace, as of a checkpoint
// (default: the run's last one with a workspace), checked against the
// sha256 of the manifest.
func fileCommand() command {
	cmd := command{usage: "[--checkpoint ID] [-o FILE] [--force] RUN_ID PATH",
		summary: "print one file of a run's workspace (default: as of its last checkpoint with a workspace), checked against its sha256",
		fields:  map[string]string{"checkpoint": "--checkpoint", "path": "PATH"}}
	cmd.run = func(ctx context.Context, c *cli, args []string) error {
		fs := c.flags("file")
		cp := fs.String("checkpoint", "", "the checkpoint whose workspace to read (see show)")
		out := fs.String("o", "", "write to FILE, which must not exist (default, or -: stdout)")
		force := fs.Bool("force", false, "replace FILE if it exists (a symlink is replaced, never followed)")
		pos, cl, err := c.connect(fs, args, "RUN_ID", "PATH")
		if err != nil {
			return err
		}
		if *cp == "" {
			vs, err := cl.Workspace(ctx, pos[0])
			if err != nil {
				return err
			}
			if len(vs) == 0 {
				return fmt.Errorf("run %s has no workspace (no checkpoint records one)", pos[0])
			}
			*cp = vs[len(vs)-1].CheckpointID
		}
		b, sum, err := cl.WorkspaceFile(ctx, pos[0], *cp, pos[1])
		if err != nil {
			return err
		}
		if *out == "" || *out == "-" {
			_, err = c.stdout.Write(b)
			return err
		}
		if err := writeNew(*out, b, *force); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "wrote %s (%d bytes, sha256 %s, checkpoint %s)\n", *out, len(b), sum, *cp)
		return nil
	}
	return cmd
}
