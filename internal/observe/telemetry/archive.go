package telemetry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/keelrun/keel/internal/kernel/artifact"
	"github.com/keelrun/keel/internal/kernel/run"
)

// Files are the names of a bundle's files, in the archive's order.
var Files = []string{"events.jsonl", "checkpoints.jsonl", "last_state.json", "trace.json", "tool_calls.csv", "env.txt", "workspaces.json"}

// BundleName is the artifact name of a run's bundle for its status.
func BundleName(status run.Status) string { return "debug-bundle-" + string(status) + ".tar.gz" }

// maxFile bounds one file read back from an archive (ReadArchive): a
// bundle is records of one run, and a larger entry is not one of ours.
const maxFile = 256 << 20

// States reads a checkpoint's state bytes (inline, or from the artifact
// store when StateRef is set).
type States interface {
	Get(ctx context.Context, k artifact.Key) ([]byte, artifact.Info, error)
}

// Archive renders the bundle as a tar.gz of the seven [Files]. The bytes
// depend on the records only (every entry's time is the run's last
// update, the gzip header carries none), so archiving an unchanged run
// twice gives the same artifact. arts reads checkpoint states stored as
// artifacts; nil leaves those out of last_state.json.
func Archive(ctx context.Context, b Bundle, arts States, env Env) ([]byte, error) {
	tl := Rebuild(b)
	files := map[string][]byte{}
	var err error
	if files["events.jsonl"], err = jsonLines(b.Events); err != nil {
		return nil, err
	}
	metas := make([]run.Checkpoint, len(b.Checkpoints))
	for i, cp := range b.Checkpoints {
		cp.State = nil // where to resume; the transcript is in last_state.json
		metas[i] = cp
	}
	if files["checkpoints.jsonl"], err = jsonLines(metas); err != nil {
		return nil, err
	}
	last, err := lastState(ctx, b, arts)
	if err != nil {
		return nil, err
	}
	if files["last_state.json"], err = json.MarshalIndent(last, "", "  "); err != nil {
		return nil, fmt.Errorf("bundle: last_state.json: %w", err)
	}
	if files["trace.json"], err = json.MarshalIndent(BuildTrace(b, tl, env), "", "  "); err != nil {
		return nil, fmt.Errorf("bundle: trace.json: %w", err)
	}
	if files["tool_calls.csv"], err = ToolCallsCSV(tl); err != nil {
		return nil, fmt.Errorf("bundle: tool_calls.csv: %w", err)
	}
	files["env.txt"] = []byte(env.Text(b.WrittenAt))
	if files["workspaces.json"], err = workspaces(ctx, b, arts); err != nil {
		return nil, err
	}
	for name, data := range files {
		files[name] = env.Secrets.Bytes(data)
	}

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.Name = "keel-" + b.Run.ID + ".tar" // no ModTime: same records, same bytes
	tw := tar.NewWriter(zw)
	dir := "keel-" + b.Run.ID + "/"
	for _, name := range Files {
		data := files[name]
		hdr := &tar.Header{Name: dir + name, Mode: 0o644, Size: int64(len(data)), ModTime: b.WrittenAt, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func jsonLines[T any](vs []T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// LastState is last_state.json: the run as it stood when the bundle was
// written, the transcript its last checkpoint resumes from, and what was
// left open.
type LastState struct {
	Run        run.Run           `json:"run"`
	Checkpoint *run.Checkpoint   `json:"checkpoint,omitempty"`
	Messages   []json.RawMessage `json:"messages"`
	// MissingStates names checkpoints whose state could not be read (an
	// artifact the bundle writer had no access to).
	MissingStates []string        `json:"missing_states,omitempty"`
	OpenItems     []run.PlanItem  `json:"open_plan_items"`
	OpenOps       []run.Operation `json:"open_operations"`
	OpenApprovals []run.Approval  `json:"open_approvals"`
}

func lastState(ctx context.Context, b Bundle, arts States) (LastState, error) {
	ls := LastState{Run: b.Run, Messages: []json.RawMessage{}, OpenItems: []run.PlanItem{}, OpenOps: []run.Operation{}, OpenApprovals: []run.Approval{}}
	// The run's own chain: each checkpoint holds what its step added.
	for _, cp := range b.Checkpoints {
		data := cp.State
		if cp.StateRef != "" {
			k, err := artifact.ParsePath(cp.StateRef)
			if err == nil && arts != nil {
				data, _, err = arts.Get(ctx, k)
			}
			if err != nil || arts == nil {
				ls.MissingStates = append(ls.MissingStates, cp.ID)
				continue
			}
		}
		var st struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if len(data) > 0 {
			if err := json.Unmarshal(data, &st); err != nil {
				return ls, fmt.Errorf("bundle: checkpoint %s state: %w", cp.ID, err)
			}
		}
		ls.Messages = append(ls.Messages, st.Messages...)
		meta := cp
		meta.State = nil
		ls.Checkpoint = &meta
		if cp.ID == b.Run.CheckpointID {
			break
		}
	}
	for _, it := range b.PlanItems {
		switch it.Status {
		case run.PlanPending, run.PlanAwaitingApproval, run.PlanRunning, run.PlanNeedsHuman:
			ls.OpenItems = append(ls.OpenItems, it)
		}
	}
	for _, op := range b.Operations {
		if op.Status == run.OpPending || op.Status == run.OpNeedsHuman {
			ls.OpenOps = append(ls.OpenOps, op)
		}
	}
	for _, ap := range b.Approvals {
		if ap.Status == run.ApprovalPending {
			ls.OpenApprovals = append(ls.OpenApprovals, ap)
		}
	}
	return ls, nil
}

// ReadArchive opens a bundle archive and returns its files by name (the
// directory prefix removed).
func ReadArchive(data []byte) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		name := hdr.Name
		if i := bytes.LastIndexByte([]byte(name), '/'); i >= 0 {
			name = name[i+1:]
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFile+1))
		if err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", name, err)
		}
		if len(b) > maxFile {
			return nil, fmt.Errorf("bundle: %s is larger than %d bytes", name, maxFile)
		}
		out[name] = b
	}
}

// Build collects a run's records and renders its archive.
func Build(ctx context.Context, rec Records, arts States, runID string, env Env) (Bundle, []byte, error) {
	b, err := Collect(ctx, rec, runID)
	if err != nil {
		return b, nil, err
	}
	data, err := Archive(ctx, b, arts, env)
	return b, data, err
}

// Write builds the bundle and stores it as the artifact
// runs/{run}/checkpoints/{last checkpoint or "final"}/debug-bundle-{status}.tar.gz.
// Writing it again for an unchanged run is a no-op (the bytes are the
// same).
func Write(ctx context.Context, rec Records, arts artifact.Store, runID string, env Env) (artifact.Info, error) {
	b, data, err := Build(ctx, rec, arts, runID, env)
	if err != nil {
		return artifact.Info{}, err
	}
	cp := b.Run.CheckpointID
	if cp == "" {
		cp = "final"
	}
	return arts.Put(ctx, artifact.Key{RunID: runID, CheckpointID: cp, Name: BundleName(b.Run.Status)}, data)
}
