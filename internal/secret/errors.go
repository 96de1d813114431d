package secret

// MaskError returns an error whose message is err's message masked, or nil
// when err is nil. The message is masked each time Error is called, so
// values added to m later are hidden too. errors.Is and errors.As still see
// err through Unwrap; note that an error obtained that way prints unmasked.
func (m *Masker) MaskError(err error) error {
	if err == nil {
		return nil
	}
	return &maskedError{m: m, err: err}
}

// maskedError is an error with a masked message.
type maskedError struct {
	m   *Masker
	err error
}

func (e *maskedError) Error() string { return e.m.Mask(e.err.Error()) }

func (e *maskedError) Unwrap() error { return e.err }
