package writes

// Queued returns how many updates of branch wait for a committer.
func (e *Engine) Queued(branch string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if q := e.queues[branch]; q != nil {
		return len(q.ops)
	}
	return 0
}
