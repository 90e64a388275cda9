package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Gemini's streamGenerateContent?alt=sse: each event is a whole
// GenerateContentResponse; text comes in pieces, a function call whole,
// with a thoughtSignature the client must send back with it.

// geminiSchemaFields are the fields of Gemini's Schema object: a request
// whose tool parameters name another (additionalProperties, $schema) is
// refused by the real API with a 400.
var geminiSchemaFields = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"maxItems": true, "minItems": true, "properties": true, "required": true, "minProperties": true,
	"maxProperties": true, "minLength": true, "maxLength": true, "pattern": true, "example": true,
	"anyOf": true, "propertyOrdering": true, "default": true, "items": true, "minimum": true, "maximum": true,
}

func checkGeminiSchema(t *testing.T, where string, s map[string]any) {
	for k, v := range s {
		if !geminiSchemaFields[k] {
			t.Errorf("provider: %s: Gemini's Schema has no field %q", where, k)
		}
		switch k {
		case "properties":
			props, _ := v.(map[string]any)
			for name, p := range props {
				pm, _ := p.(map[string]any)
				checkGeminiSchema(t, where+"."+name, pm)
			}
		case "items":
			im, _ := v.(map[string]any)
			checkGeminiSchema(t, where+"[]", im)
		case "type":
			if _, ok := v.(string); !ok {
				t.Errorf("provider: %s: type %v is not one name", where, v)
			}
		}
	}
}

// geminiSignature is the thoughtSignature the fake gives a call, so that
// it can tell a history that kept it.
func geminiSignature(name string, args map[string]any) string {
	b, _ := json.Marshal(args) // map keys sorted: canonical
	h := sha256.Sum256(append([]byte(name+"\x00"), b...))
	return base64.StdEncoding.EncodeToString(h[:12])
}

func parseGoogle(t *testing.T, raw map[string]any) *Request {
	req := &Request{Tools: map[string]string{}}
	if si, ok := raw["systemInstruction"].(map[string]any); ok {
		for _, p := range asList(si["parts"]) {
			req.System += str(p.(map[string]any)["text"])
		}
	}
	if gc, ok := raw["generationConfig"].(map[string]any); ok {
		if n, ok := gc["maxOutputTokens"].(float64); ok {
			req.MaxTokens = int(n)
		}
	}
	parseGoogleTools(t, raw, req)
	var pending []SeenCall // the last model turn's calls, awaiting responses
	lastRole := ""
	for _, c := range asList(raw["contents"]) {
		cm := c.(map[string]any)
		role := str(cm["role"])
		if role != "user" && role != "model" {
			t.Errorf("provider: content role %q, want user or model", role)
		}
		if role == lastRole {
			t.Errorf("provider: two %s contents in a row", role)
		}
		lastRole = role
		sm := SeenMsg{Role: map[string]string{"user": "user", "model": "assistant"}[role]}
		var responses int
		for _, p := range asList(cm["parts"]) {
			pm := p.(map[string]any)
			switch {
			case pm["functionCall"] != nil:
				fc := pm["functionCall"].(map[string]any)
				args, ok := fc["args"].(map[string]any)
				if !ok && fc["args"] != nil {
					t.Errorf("provider: functionCall args %v is not an object", fc["args"])
				}
				if got, want := str(pm["thoughtSignature"]), geminiSignature(str(fc["name"]), args); got != want {
					t.Errorf("provider: call %s came back with thoughtSignature %q, want the %q it was given", str(fc["name"]), got, want)
				}
				b, _ := json.Marshal(args)
				sm.Calls = append(sm.Calls, SeenCall{ID: str(fc["id"]), Name: str(fc["name"]), Args: string(b)})
			case pm["functionResponse"] != nil:
				fr := pm["functionResponse"].(map[string]any)
				resp, ok := fr["response"].(map[string]any)
				if !ok {
					t.Errorf("provider: functionResponse.response %v is not an object", fr["response"])
				}
				if responses >= len(pending) {
					t.Errorf("provider: functionResponse %s answers no call", str(fr["name"]))
				} else if want := pending[responses]; str(fr["name"]) != want.Name || str(fr["id"]) != want.ID {
					t.Errorf("provider: functionResponse %s/%s answers call %s/%s", str(fr["name"]), str(fr["id"]), want.Name, want.ID)
				}
				responses++
				b, _ := json.Marshal(resp)
				_, isErr := resp["error"]
				req.Messages = append(req.Messages, SeenMsg{Role: "tool", Text: string(b), ToolUseID: str(fr["id"]), IsError: isErr})
			default:
				sm.Text += str(pm["text"])
			}
		}
		if role == "user" && responses != len(pending) {
			t.Errorf("provider: %d function calls answered by %d responses", len(pending), responses)
		}
		pending = sm.Calls
		if sm.Text != "" || len(sm.Calls) > 0 || role == "model" {
			req.Messages = append(req.Messages, sm)
		}
	}
	return req
}

// parseGoogleTools reads the function declarations and the calling mode.
func parseGoogleTools(t *testing.T, raw map[string]any, req *Request) {
	for _, tl := range asList(raw["tools"]) {
		for _, fd := range asList(tl.(map[string]any)["functionDeclarations"]) {
			f := fd.(map[string]any)
			req.Tools[str(f["name"])] = str(f["description"])
			params, ok := f["parameters"].(map[string]any)
			if !ok || str(params["type"]) != "object" {
				t.Errorf("provider: function %s has no object parameters", str(f["name"]))
			}
			checkGeminiSchema(t, str(f["name"]), params)
		}
	}
	if tc, ok := raw["toolConfig"].(map[string]any); ok {
		fc, _ := tc["functionCallingConfig"].(map[string]any)
		req.ToolChoiceNone = str(fc["mode"]) == "NONE"
	}
}

func writeGoogleStream(t *testing.T, w http.ResponseWriter, n int, tr Turn) {
	event := func(parts []any, finish string) {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "modelVersion": "scripted-model",
			"usageMetadata": map[string]any{"promptTokenCount": 100 + n, "candidatesTokenCount": 10, "totalTokenCount": 110 + n}})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		flush(w)
	}
	for i, p := range pieces(tr.Text) {
		if tr.CutAfter > 0 && i == tr.CutAfter {
			return
		}
		event([]any{map[string]any{"text": p}}, "")
	}
	var calls []any
	for _, c := range tr.Calls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Args), &args); err != nil || args == nil {
			t.Errorf("provider: Gemini's protocol carries only object arguments, not %s", strings.TrimSpace(c.Args))
			continue
		}
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args},
			"thoughtSignature": geminiSignature(c.Name, args)})
	}
	// The calls come whole, in the event that ends the turn.
	event(calls, "STOP")
}
