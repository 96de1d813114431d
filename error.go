package stepwise

import (
	"errors"

	"stepwise.dev/stepwise/internal/service"
)

// Error is an error a caller can act on: refused input, an unknown run,
// a token that no longer works. Code is one of package code's error codes;
// a refusal changed nothing. Other errors (the context's, the database's)
// are returned as they are.
type Error struct {
	// Code says what the error is about (code.AnswerInvalid …).
	Code string
	// Message says it in words.
	Message string
	// RunID and StepID name the run and step concerned, when there are.
	RunID, StepID string
	// Violations lists every problem of a refused input or answer.
	Violations []Violation
	// Retryable says whether the same call may succeed later.
	Retryable bool
	// Suggestion says what to do next.
	Suggestion string

	err error
}

// Violation is one problem of a refused definition, input or answer.
type Violation struct {
	// Path is a JSON pointer to the offending value ("" is the whole).
	Path string
	// Message says what is wrong.
	Message string
}

func (e *Error) Error() string {
	msg := e.Message
	if len(e.Violations) > 0 {
		msg += ": " + e.Violations[0].Message
	}
	return msg
}

// Unwrap returns the error's cause, if any.
func (e *Error) Unwrap() error { return e.err }

// errorOf converts the engine's structured errors to *Error at the
// boundary; other errors pass unchanged.
func errorOf(err error) error {
	var ee *service.Error
	if err == nil || !errors.As(err, &ee) {
		return err
	}
	out := &Error{Code: ee.Code, Message: ee.Message, RunID: ee.RunID, StepID: ee.StepID,
		Retryable: ee.Retryable, Suggestion: ee.Suggestion, err: ee.Err}
	for _, v := range ee.Violations {
		out.Violations = append(out.Violations, Violation{Path: v.Path, Message: v.Message})
	}
	return out
}
