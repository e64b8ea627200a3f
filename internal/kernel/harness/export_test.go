package harness

// CachedMessages is how many transcript messages h's cache holds for
// runID, or -1 when it holds no entry (for the tests of package
// harness_test).
func CachedMessages(h *Harness, runID string) int {
	if h.cache == nil {
		return -1
	}
	h.cache.mu.Lock()
	defer h.cache.mu.Unlock()
	e, ok := h.cache.entries[runID]
	if !ok {
		return -1
	}
	return len(e.msgs)
}
