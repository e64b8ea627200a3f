package harness

import (
	"slices"
	"sort"

	"github.com/keelrun/keel/internal/kernel/model"
)

// transcriptView is what a model call needs from the transcript — the
// coalesced messages it is sent, their size for the token estimate, and
// each tool's latest result for the recorded answer's references — kept up
// to date as messages are appended. Rebuilding them from the whole
// transcript at every iteration made a long run's iteration cost grow with
// its length (quadratic in all); here an iteration costs the same at
// message 10 and at message 200,000.
//
// The view also applies the agent's context window (the transcript
// policy): a model call is sent the transcript's first message (the task)
// and the longest tail of the transcript that fits the window, cut just
// before one of the model's own answers so that every tool result goes
// with its call. What falls out of the window is needed by no later model
// call, so the step drops it from memory (trim); the store keeps the whole
// transcript. That is what keeps a worker's memory for a run bounded by the
// window, not by the run's age.
//
// The window is a function of the whole transcript only (see window): the
// tail grows by appends, so its start only moves forward, and a view that
// folded the transcript in many pieces (a warm worker) chooses the same
// cut as one that folded it at once (a Step after a restart).
//
// Within a Step the transcript is append-only (its messages only grow,
// except for trim), which is what makes the view incremental: update folds
// msgs[v.n:] in.
type transcriptView struct {
	// budget is how many characters (as msgChars counts them) the
	// first message and the tail may hold together; 0: no bound.
	budget int

	n       int // msgs[:n] are folded in
	dropped int // messages trim removed from msgs[1:]: physical index i ≥ 1 is message i+dropped

	cut         int   // msgs[cut:n] is the window's tail (physical index; 1 when nothing is left out)
	answers     []int // physical indices of the assistant messages in msgs[cut+1:n], for moving cut
	omitted     int   // messages between the first one and the tail
	omittedAsst int   // of them, the model's answers
	headChars   int
	tailChars   int
	coal        []model.Message // coal[0] is coalesce(msgs[:1]); coal[coalCut:] is coalesce(msgs[cut:n])
	coalCut     int
	sent        int // coal[:sent] was handed to a model: never mutated again
	names       map[string]string
	latest      map[string]resultPos // each tool's latest non-error result, by transcript position: the candidates resultFields reads
}

type resultPos struct{ msg, res int }

// defaultContextTokens is the context window of an agent that names none:
// at four characters a token, well inside today's models' windows.
const defaultContextTokens = 100_000

// windowChars is the character budget of agent's context window: its
// tokens less the answer's ceiling and the system prompt, at the four
// characters a token the reservation estimate assumes.
func windowChars(a Agent) int {
	tokens := a.ContextTokens
	if tokens <= 0 {
		tokens = defaultContextTokens
	}
	return max(1, (tokens-a.MaxTokens)*4-len(a.System))
}

func msgChars(m model.Message) int {
	n := len(m.Text)
	for _, tc := range m.ToolCalls {
		n += len(tc.Args)
	}
	for _, tr := range m.ToolResults {
		n += len(tr.Content)
	}
	return n
}

func (v *transcriptView) update(msgs []model.Message) {
	if v.names == nil {
		v.names, v.latest = map[string]string{}, map[string]resultPos{}
	}
	for i := v.n; i < len(msgs); i++ {
		m := msgs[i]
		c := msgChars(m)
		for _, tc := range m.ToolCalls {
			v.names[tc.ID] = tc.Name
		}
		for j, tr := range m.ToolResults {
			if tool := v.names[tr.CallID]; tool != "" {
				if tr.IsError {
					// An error result does not shadow an earlier success:
					// resultFields skips errors.
					continue
				}
				v.latest[tool] = resultPos{v.abs(i), j}
			}
		}
		if i == 0 {
			v.headChars, v.cut = c, 1
			v.coal, v.coalCut = append(v.coal, m), 1
			continue
		}
		v.tailChars += c
		if m.Role == model.RoleAssistant && i > v.cut {
			v.answers = append(v.answers, i)
		}
		if last := len(v.coal) - 1; m.Role == model.RoleTool && last >= v.coalCut && v.coal[last].Role == model.RoleTool {
			if last < v.sent {
				// A model holds a request sharing coal's array: copy
				// rather than change what it was sent.
				v.coal, v.sent = slices.Clone(v.coal), 0
			}
			l := &v.coal[last]
			l.ToolResults = append(l.ToolResults[:len(l.ToolResults):len(l.ToolResults)], m.ToolResults...)
		} else {
			v.coal = append(v.coal, m)
		}
		v.n = i + 1
		v.fit(msgs)
	}
	v.n = len(msgs)
}

// abs is the transcript position of physical index i.
func (v *transcriptView) abs(i int) int {
	if i == 0 {
		return 0
	}
	return i + v.dropped
}

// fit moves the tail's start to the next answer while the window is over
// its budget and a later answer exists: the least cut that fits, or the
// last answer when none does (the open calls and their results are
// always sent).
func (v *transcriptView) fit(msgs []model.Message) {
	for v.budget > 0 && v.headChars+v.tailChars > v.budget && len(v.answers) > 0 {
		next := v.answers[0]
		v.answers = v.answers[1:]
		for k := v.cut; k < next; k++ {
			m := msgs[k]
			v.tailChars -= msgChars(m)
			v.omitted++
			if m.Role == model.RoleAssistant {
				v.omittedAsst++
			}
			for _, tc := range m.ToolCalls {
				delete(v.names, tc.ID)
			}
			// msgs[k] began a coalesced message unless it is a tool
			// message following one; msgs[cut] is an answer (or the
			// first message after the task), which always begins one.
			if k == v.cut || m.Role != model.RoleTool || msgs[k-1].Role != model.RoleTool {
				v.coalCut++
			}
		}
		v.cut = next
	}
}

// request returns the coalesced window for a model request.
func (v *transcriptView) request(msgs []model.Message) []model.Message {
	v.update(msgs)
	if v.omitted == 0 {
		v.sent = len(v.coal)
		return slices.Clip(v.coal)
	}
	// The window is not contiguous in coal: a copy, which also leaves
	// coal free to change.
	out := make([]model.Message, 0, 1+len(v.coal)-v.coalCut)
	return append(append(out, v.coal[0]), v.coal[v.coalCut:]...)
}

// estimate is the reservation estimate of a request of the window:
// about four characters a token in, plus the answer's ceiling out.
func (v *transcriptView) estimate(system string, maxTokens int) int64 {
	return int64((len(system)+v.headChars+v.tailChars)/4) + int64(maxTokens)
}

// refs is resultFields of the window, read from the latest results only.
func (v *transcriptView) refs(msgs []model.Message) map[string]string {
	v.update(msgs)
	from := v.abs(v.cut)
	pos := make([]resultPos, 0, len(v.latest))
	for _, p := range v.latest {
		// A latest result before the window means the tool has none in
		// it: every later one would be the latest.
		if p.msg == 0 || p.msg >= from {
			pos = append(pos, p)
		}
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
		i := p.msg
		if i > 0 {
			i -= v.dropped
		}
		tr := msgs[i].ToolResults[p.res]
		addRefs(refs, v.names[tr.CallID], tr.Content)
	}
	return refs
}

// trim drops from msgs what no later model call needs: the messages
// between the first one and the window's tail, as far as they are
// committed (the store has them). It returns the transcript the step
// keeps and the new count of committed messages. Unless force, it trims
// only when the dropped part outweighs the kept one, so that the copy
// costs O(1) an append.
func (v *transcriptView) trim(msgs []model.Message, committed int, force bool) ([]model.Message, int) {
	v.update(msgs)
	k := min(v.cut, committed) // msgs[1:k] go
	gone := k - 1
	if gone <= 0 || (!force && gone < len(msgs)-gone) {
		return msgs, committed
	}
	kept := make([]model.Message, 0, 1+len(msgs)-k+(len(msgs)-k)/2)
	kept = append(append(kept, msgs[0]), msgs[k:]...)
	v.n -= gone
	v.cut -= gone
	v.dropped += gone
	for i := range v.answers {
		v.answers[i] -= gone
	}
	v.answers = slices.Clone(v.answers)
	if dead := v.coalCut - 1; dead > 0 && (force || dead >= len(v.coal)-v.coalCut) {
		// A new array: requests already sent keep the old one.
		c := make([]model.Message, 0, 1+len(v.coal)-v.coalCut+(len(v.coal)-v.coalCut)/2)
		v.coal = append(append(c, v.coal[0]), v.coal[v.coalCut:]...)
		v.coalCut, v.sent = 1, 0
	}
	return kept, committed - gone
}

// window is the transcript policy applied to a whole transcript, the
// definition the incremental view keeps: the first message and the
// longest tail that fits budget characters, starting at an answer (or
// right after the first message), or from the last answer when none fits;
// omitted counts what is left out between them, asst the answers among
// it. The tests hold the view to it.
func window(msgs []model.Message, budget int) (out []model.Message, omitted, asst int) {
	if len(msgs) == 0 {
		return nil, 0, 0
	}
	head := msgChars(msgs[0])
	tail := 0
	for _, m := range msgs[1:] {
		tail += msgChars(m)
	}
	cut := 1
	for i := 2; i < len(msgs) && budget > 0 && head+tail > budget; i++ {
		if msgs[i].Role != model.RoleAssistant {
			continue
		}
		for k := cut; k < i; k++ {
			tail -= msgChars(msgs[k])
			omitted++
			if msgs[k].Role == model.RoleAssistant {
				asst++
			}
		}
		cut = i
	}
	return append([]model.Message{msgs[0]}, msgs[cut:]...), omitted, asst
}

// coalesce joins consecutive tool messages into one, as a model is sent
// them: the whole-transcript definition the view's coal keeps.
func coalesce(msgs []model.Message) []model.Message {
	out := make([]model.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == model.RoleTool && len(out) > 0 && out[len(out)-1].Role == model.RoleTool {
			last := &out[len(out)-1]
			last.ToolResults = append(append([]model.ToolResult(nil), last.ToolResults...), m.ToolResults...)
			continue
		}
		out = append(out, m)
	}
	return out
}
