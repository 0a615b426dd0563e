package errdefs

import "errors"

// The error classes. Test with errors.Is.
var (
	ErrNotFound           = errors.New("not found")
	ErrAlreadyExists      = errors.New("already exists")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrFailedPrecondition = errors.New("failed precondition")
	ErrUnavailable        = errors.New("unavailable")
	ErrNotImplemented     = errors.New("not implemented")
)

// IsNotFound reports whether err is of the NotFound class.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
