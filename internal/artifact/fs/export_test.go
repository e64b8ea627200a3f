package fs

// SetTrace has s report each durability-relevant operation, in order.
func SetTrace(s *Store, f func(op, path string)) { s.trace = f }

// UsePointerFiles has s write pointer files, as where symlinks fail.
func UsePointerFiles(s *Store) { s.noSymlinks.Store(true) }
