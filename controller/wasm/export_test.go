package wasm

// SetMaxWrittenBytes bounds the files a put or delete may hold to n bytes
// until restore is called. Tests that call it must not run in parallel.
func SetMaxWrittenBytes(n int64) (restore func()) {
	old := maxWrittenBytes
	maxWrittenBytes = n
	return func() { maxWrittenBytes = old }
}

// Interruptible is the rewrite every module gets before it is compiled.
func Interruptible(module []byte) ([]byte, error) { return interruptible(module) }

// DataSegments returns how many data segments module has.
func DataSegments(module []byte) int {
	r := reader{b: module[8:]}
	for !r.done() {
		id, p := r.byte(), r.bytes(r.u32())
		if id == sectionData {
			s := reader{b: p}
			return int(s.u32())
		}
	}
	return 0
}
