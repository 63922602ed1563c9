package main

// exitInterrupted is the exit code of a command stopped by SIGINT or SIGTERM before it
// finished, as a shell reports a process killed by SIGINT (128 + 2).
const exitInterrupted = 130

// interruptError marks a command as stopped by a signal (exit 130) after it printed what
// it had.
type interruptError struct{ err error }

func (e *interruptError) Error() string { return e.err.Error() }
func (e *interruptError) Unwrap() error { return e.err }
