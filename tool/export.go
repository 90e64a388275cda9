package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
)

//go:generate go test -run ^TestExportedSchemas$ -update .

// ExportPath is where ExportSchemas' output is committed, from the
// repository root: the WordPress plugin builds its abilities from it.
const ExportPath = "wp-plugin-shim/includes/tool-schemas.json"

// exportedTool is one tool as the plugin reads it.
type exportedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	Annotations  Annotations     `json:"annotations"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// ExportSchemas returns the tool contract as one JSON document: each
// tool's name, title, description, annotations and input and output
// schemas, indented, with a trailing newline. The plugin's copy
// (ExportPath) is this, byte for byte; `go generate ./tool` writes it.
func ExportSchemas() ([]byte, error) {
	doc := struct {
		Comment string         `json:"comment"`
		Tools   []exportedTool `json:"tools"`
	}{Comment: "Generated from tool/schema.go by `go generate ./tool`: do not edit."}
	for _, t := range Tools {
		if t.Title == "" || len(t.OutputSchema) == 0 {
			return nil, fmt.Errorf("tool: %s has no title or output schema", t.Function.Name)
		}
		doc.Tools = append(doc.Tools, exportedTool{Name: t.Function.Name, Title: t.Title, Description: t.Function.Description,
			Annotations: t.Annotations, InputSchema: t.Function.Parameters, OutputSchema: t.OutputSchema})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("tool: export schemas: %w", err)
	}
	return buf.Bytes(), nil
}
