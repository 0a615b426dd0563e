package monitor

// ForwardResizes passes each size received on sizes to apply, in order,
// until done is closed, sizes is closed, or apply returns an error. A nil
// sizes returns at once. It is the one resize loop of attach (frames to the
// monitor) and of exec with a terminal (ioctls on the pty).
func ForwardResizes(sizes <-chan TerminalSize, done <-chan struct{}, apply func(TerminalSize) error) {
	if sizes == nil {
		return
	}
	for {
		select {
		case <-done:
			return
		case size, ok := <-sizes:
			if !ok {
				return
			}
			if apply(size) != nil {
				return
			}
		}
	}
}
