package harness

import (
	"slices"
	"sort"

	"github.com/keelrun/keel/internal/model"
)

// transcriptView is what a model call needs from the transcript — the
// coalesced messages it is sent, their size for the token estimate, and
// each tool's latest result for the recorded answer's references — kept up
// to date as messages are appended. Rebuilding them from the whole
// transcript at every iteration made a long run's iteration cost grow with
// its length (quadratic in all); here an iteration costs the same at
// message 10 and at message 200,000.
//
// The transcript is append-only within a Step (step.msgs only grows), which
// is what makes the view incremental: update folds msgs[v.n:] in.
type transcriptView struct {
	n     int             // msgs[:n] are folded in
	coal  []model.Message // coalesce(msgs[:n])
	sent  int             // coal[:sent] was handed to a model: never mutated again
	chars int             // message characters counted by estimateTokens
	names map[string]string
	// latest is each tool's latest non-error result, by position: the
	// candidates resultFields reads.
	latest map[string]resultPos
}

type resultPos struct{ msg, res int }

func (v *transcriptView) update(msgs []model.Message) {
	if v.names == nil {
		v.names, v.latest = map[string]string{}, map[string]resultPos{}
	}
	for i := v.n; i < len(msgs); i++ {
		m := msgs[i]
		v.chars += len(m.Text)
		for _, tc := range m.ToolCalls {
			v.chars += len(tc.Args)
			v.names[tc.ID] = tc.Name
		}
		for j, tr := range m.ToolResults {
			v.chars += len(tr.Content)
			if tool := v.names[tr.CallID]; tool != "" {
				if tr.IsError {
					// An error result does not shadow an earlier success:
					// resultFields skips errors.
					continue
				}
				v.latest[tool] = resultPos{i, j}
			}
		}
		if last := len(v.coal) - 1; m.Role == model.RoleTool && last >= 0 && v.coal[last].Role == model.RoleTool {
			if last < v.sent {
				// A model holds a request sharing coal's array: copy
				// rather than change what it was sent.
				v.coal, v.sent = slices.Clone(v.coal), 0
			}
			l := &v.coal[last]
			l.ToolResults = append(l.ToolResults[:len(l.ToolResults):len(l.ToolResults)], m.ToolResults...)
			continue
		}
		v.coal = append(v.coal, m)
	}
	v.n = len(msgs)
}

// request returns the coalesced transcript for a model request.
func (v *transcriptView) request(msgs []model.Message) []model.Message {
	v.update(msgs)
	v.sent = len(v.coal)
	return slices.Clip(v.coal)
}

// estimate is estimateTokens for a request of the folded transcript.
func (v *transcriptView) estimate(system string, maxTokens int) int64 {
	return int64((len(system)+v.chars)/4) + int64(maxTokens)
}

// refs is resultFields(msgs[:v.n]), read from the latest results only.
func (v *transcriptView) refs(msgs []model.Message) map[string]string {
	v.update(msgs)
	pos := make([]resultPos, 0, len(v.latest))
	for _, p := range v.latest {
		pos = append(pos, p)
	}
	// Latest first: where two results hold a value, the latest wins.
	sort.Slice(pos, func(a, b int) bool {
		if pos[a].msg != pos[b].msg {
			return pos[a].msg > pos[b].msg
		}
		return pos[a].res > pos[b].res
	})
	refs := map[string]string{}
	for _, p := range pos {
		tr := msgs[p.msg].ToolResults[p.res]
		addRefs(refs, v.names[tr.CallID], tr.Content)
	}
	return refs
}
