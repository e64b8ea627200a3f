package fs

// SetTrace has s report each durability-relevant operation, in order.
func SetTrace(s *Store, f func(op, path string)) { s.trace = f }
