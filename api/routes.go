package api

// Route groups that other parts of the API fill in, each in its own file
// (events.go, chat.go, admin.go, mcp.go) as they are built. Each registers
// nothing until its backend interface is implemented.
