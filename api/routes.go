package api

import "github.com/labstack/echo/v4"

// Route groups that other parts of the API fill in, each in its own file
// (events.go, chat.go, admin.go, mcp.go) as they are built. Each registers
// nothing until its backend interface is implemented.

func (s *Server) registerEventRoutes(e *echo.Echo) {}

func (s *Server) registerChatRoutes(g *echo.Group) {}

func (s *Server) registerAdminRoutes(e *echo.Echo, g *echo.Group) {}

func (s *Server) registerMCPRoutes(e *echo.Echo) {}
