package wasm

// SetMaxWrittenBytes bounds the files a put or delete may hold to n bytes
// until restore is called. Tests that call it must not run in parallel.
func SetMaxWrittenBytes(n int64) (restore func()) {
	old := maxWrittenBytes
	maxWrittenBytes = n
	return func() { maxWrittenBytes = old }
}
