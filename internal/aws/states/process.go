package states

import (
	"errors"
	"fmt"
)

// StateError is a named error raised while running a state: the Error and
// Cause of Step Functions' error output.
type StateError struct {
	Name  string
	Cause string
}

func (e *StateError) Error() string { return e.Name + ": " + e.Cause }

func newStateError(name string, err error) *StateError {
	return &StateError{Name: name, Cause: err.Error()}
}

// classify turns an input/output processing failure into its named error.
func classify(err error, fallback string) *StateError {
	var se *StateError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, errIntrinsic):
		return newStateError(ErrIntrinsicFailure, err)
	case errors.Is(err, errParameterPath):
		return newStateError(ErrParameterPathFailure, err)
	case errors.Is(err, errResultPath):
		return newStateError(ErrResultPathMatchFail, err)
	default:
		return newStateError(fallback, err)
	}
}

// effectiveInput applies InputPath and then Parameters to the raw input.
// The second result is the input after InputPath alone, which
// TimeoutSecondsPath and friends read.
func effectiveInput(st *State, raw, ctxObj any) (any, any, *StateError) {
	in, err := applyPath(st.InputPath, raw)
	if err != nil {
		return nil, nil, newStateError(ErrRuntime, fmt.Errorf("InputPath: %w", err))
	}
	if st.Parameters == nil {
		return in, in, nil
	}
	eff, err := st.Parameters.eval(in, ctxObj)
	if err != nil {
		return nil, nil, classify(err, ErrParameterPathFailure)
	}
	return eff, in, nil
}

// stateOutput applies ResultSelector, ResultPath and OutputPath to a result.
func stateOutput(st *State, raw, result, ctxObj any) (any, *StateError) {
	if st.ResultSelector != nil {
		r, err := st.ResultSelector.eval(result, ctxObj)
		if err != nil {
			return nil, classify(err, ErrParameterPathFailure)
		}
		result = r
	}
	out, err := applyResultPath(st.ResultPath, raw, result)
	if err != nil {
		return nil, classify(err, ErrResultPathMatchFail)
	}
	out, err = applyPath(st.OutputPath, out)
	if err != nil {
		return nil, newStateError(ErrRuntime, fmt.Errorf("OutputPath: %w", err))
	}
	return out, nil
}

// applyPath applies an InputPath/OutputPath: absent means $, null means {}.
func applyPath(p optPath, doc any) (any, error) {
	switch {
	case !p.set:
		return doc, nil
	case p.null:
		return map[string]any{}, nil
	case p.path.Context:
		return nil, errors.New("a $$ path is not allowed here")
	default:
		return p.path.Get(doc)
	}
}

// applyResultPath combines raw input and result: absent means $ (the result
// replaces the input), null discards the result.
func applyResultPath(p optPath, raw, result any) (any, error) {
	switch {
	case !p.set:
		return result, nil
	case p.null:
		return raw, nil
	default:
		return p.path.Set(raw, result)
	}
}
