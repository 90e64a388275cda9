package tool

import "strconv"

// Error is a failure that is the caller's to fix or to read: its message
// is shown as is. Code names the kind (invalid, unknown_tool, not_indexed,
// too_large, no_provider, …); the HTTP layer turns it into a status.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Invalid is an Error for arguments the caller got wrong.
func Invalid(msg string) *Error { return &Error{Code: "invalid", Message: msg} }

// ErrUnknownTool is the error for a name not in the contract.
func ErrUnknownTool(name string) *Error {
	return &Error{Code: "unknown_tool", Message: "unknown tool " + strconv.Quote(name) + "; GET /v1/tools lists them"}
}
