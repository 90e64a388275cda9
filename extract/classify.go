package extract

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Chunk type rules (see TestClassify for the table):
//
//   - A chunk holding a fenced block takes the block's type.
//     1. The fence language decides when it is known: shells and consoles are
//     "cmd"; data and configuration formats are "config"; HTTP, OpenAPI, GraphQL
//     and protobuf are "api"; any other language is "code".
//     2. Without a language the body decides: a request line ("GET /path") is
//     "api"; at least half the lines being prompts ("$ ", "# ", "PS> ") or starting
//     with a well-known command is "cmd"; valid JSON, an XML prolog, or mostly
//     "key: value" / "key = value" / "[section]" lines is "config"; else "code".
//   - A chunk without a fence is "api" when it documents an endpoint (a line or
//     inline code starting with an HTTP method and a path, or a REST route such
//     as /wp-json/...), "cmd" when most lines are prompts, else "prose".
var (
	cmdLangs = set("bash", "sh", "shell", "zsh", "ksh", "fish", "console", "shell-session", "shellsession",
		"sh-session", "terminal", "powershell", "ps", "ps1", "pwsh", "bat", "batch", "cmd", "dos", "shellscript", "tcsh", "csh")
	configLangs = set("json", "jsonc", "json5", "yaml", "yml", "toml", "ini", "cfg", "conf", "config", "properties",
		"env", "dotenv", "xml", "nginx", "nginxconf", "apache", "apacheconf", "htaccess", "hcl", "terraform", "tf",
		"dockerfile", "docker", "compose", "editorconfig", "neon", "plist", "systemd", "csv")
	apiLangs = set("http", "rest", "openapi", "swagger", "graphql", "gql", "proto", "protobuf", "wsdl", "raml", "api")

	knownCommands = set("sudo", "apt", "apt-get", "yum", "dnf", "npm", "npx", "yarn", "pnpm", "pip", "pip3", "git",
		"curl", "wget", "docker", "kubectl", "cd", "ls", "mkdir", "cp", "mv", "rm", "chmod", "chown", "systemctl",
		"service", "wp", "composer", "make", "brew", "ssh", "scp", "tar", "cat", "echo", "export", "go", "cargo",
		"python", "python3", "node", "php", "mysql", "psql", "journalctl", "ln", "touch", "grep", "find", "unzip",
		"helm", "terraform", "ansible", "vagrant", "gem", "bundle", "rails", "artisan", "gcloud", "aws", "az", "source")

	reqLineRe = regexp.MustCompile(`^(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(?:/|https?://)\S*`)
	apiRe     = regexp.MustCompile("(?m)(?:^|`)(?:GET|POST|PUT|PATCH|DELETE)\\s+(?:/|https?://)\\S*|/wp-json/[a-z0-9_-]+/v\\d|\\?rest_route=/")
	yamlRe    = regexp.MustCompile(`^\s*(?:-\s+)?["']?[\w.$-]+["']?\s*:(?:\s|$)`)
	iniRe     = regexp.MustCompile(`^\s*(?:\[[\w .:"-]+\]|[\w.$-]+\s*=\s*[^=]*)$`)
	promptRe  = regexp.MustCompile(`^\s*(?:\$|#|PS[^>]*>|>|C:\\[^>]*>)\s+\S`)
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// classifyCode types a fenced block from its language or, failing that, its body.
func classifyCode(lang, body string) string {
	switch {
	case cmdLangs[lang]:
		return TypeCmd
	case configLangs[lang]:
		return TypeConfig
	case apiLangs[lang]:
		return TypeAPI
	case lang != "":
		return TypeCode
	}
	lines := nonEmptyLines(body)
	if len(lines) == 0 {
		return TypeCode
	}
	if reqLineRe.MatchString(strings.TrimSpace(lines[0])) || strings.HasPrefix(strings.TrimSpace(lines[0]), "HTTP/") {
		return TypeAPI
	}
	cmds := 0
	for _, l := range lines {
		if promptRe.MatchString(l) {
			cmds++
			continue
		}
		if f := strings.Fields(l); len(f) > 0 && knownCommands[f[0]] && !strings.ContainsAny(l, "{};(") {
			cmds++
		}
	}
	if cmds*2 >= len(lines) {
		return TypeCmd
	}
	t := strings.TrimSpace(body)
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return TypeConfig
	}
	if strings.HasPrefix(t, "<?xml") {
		return TypeConfig
	}
	kv := 0
	for _, l := range lines {
		tl := strings.TrimSpace(l)
		if strings.HasPrefix(tl, "#") || strings.HasPrefix(tl, ";") {
			kv++ // comments are neutral-to-config in YAML/INI files
			continue
		}
		if strings.HasSuffix(tl, ";") || strings.HasSuffix(tl, "{") || strings.Contains(tl, "(") {
			continue
		}
		if yamlRe.MatchString(l) || iniRe.MatchString(l) || strings.HasPrefix(tl, "- ") {
			kv++
		}
	}
	if kv*10 >= len(lines)*7 {
		return TypeConfig
	}
	return TypeCode
}

// classifyProse types a chunk without a fence.
func classifyProse(text string) string {
	if mayBeAPI(text) && apiRe.MatchString(text) {
		return TypeAPI
	}
	lines := nonEmptyLines(text)
	if len(lines) > 0 {
		p := 0
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
				p++
			}
		}
		if p*2 > len(lines) {
			return TypeCmd
		}
	}
	return TypeProse
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// mayBeAPI is a cheap filter in front of apiRe.
func mayBeAPI(s string) bool {
	for _, w := range [...]string{"GET ", "POST ", "PUT ", "PATCH ", "DELETE ", "/wp-json/", "rest_route="} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
