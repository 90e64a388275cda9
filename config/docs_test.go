package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// The configuration reference and the Debian package's conffile are
// written by hand, for readers; these tests hold them to the struct, so a
// key added, renamed or removed in Config fails here until both say so.

const (
	referencePath = "../docs/configuration.md"
	conffilePath  = "../packaging/deb/askwpd.toml"
	// mapKey stands for the key of a map section, as the reference writes
	// it: network.sites is keyed by blog id.
	mapKey = "<blog_id>"
)

// retired are keys still in Config that the reference and the conffile no
// longer list, because they are being deleted. Delete an entry together
// with its field.
var retired = map[string]bool{}

// confKey is one leaf key of Config.
type confKey struct {
	name string        // "crawl.concurrency", "network.sites.<blog_id>.nightly"
	env  string        // "ASKWPD_CRAWL_CONCURRENCY"; "" inside a map (TOML only)
	val  reflect.Value // its value in the Config walked; invalid inside a map
}

// confKeys lists c's leaf keys from their toml tags, nested sections and
// map sections included, in struct order.
func confKeys(c Config) []confKey {
	var out []confKey
	var walk func(t reflect.Type, v reflect.Value, name, env string)
	walk = func(t reflect.Type, v reflect.Value, name, env string) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			n := tag
			if name != "" {
				n = name + "." + tag
			}
			e := ""
			if env != "" {
				e = env + "_" + strings.ToUpper(tag)
			}
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			switch {
			case sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeOf(Duration{}):
				walk(sf.Type, fv, n, e)
			case sf.Type.Kind() == reflect.Map && sf.Type.Elem().Kind() == reflect.Struct:
				walk(sf.Type.Elem(), reflect.Value{}, n+"."+mapKey, "")
			default:
				out = append(out, confKey{name: n, env: e, val: fv})
			}
		}
	}
	walk(reflect.TypeOf(c), reflect.ValueOf(c), "", "ASKWPD")
	return out
}

// docDefault renders a default as the reference writes it, between
// backticks; false for a zero value, whose effective default the
// reference describes in words (found from WordPress, applied elsewhere).
func docDefault(v reflect.Value) (string, bool) {
	if !v.IsValid() || v.IsZero() {
		return "", false
	}
	if d, ok := v.Interface().(Duration); ok {
		return d.Duration.String(), true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64), true
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ", "), true
	}
	return fmt.Sprint(v.Interface()), true
}

var referenceKeyRe = regexp.MustCompile("^`([a-z_]+(?:\\.[a-z_<>]+)*)`$")

// referenceRows reads the reference's key rows: table rows whose first
// cell is one key in backticks, mapped to their cells (key, environment,
// flag, default, meaning).
func referenceRows(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("the configuration reference: %v", err)
	}
	rows := map[string][]string{}
	for i, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := splitRow(line)
		m := referenceKeyRe.FindStringSubmatch(cells[0])
		if m == nil {
			continue
		}
		if len(cells) != 5 {
			t.Errorf("%s:%d: %s has %d cells, want 5 (key, environment, flag, default, meaning)", referencePath, i+1, m[1], len(cells))
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: %s is listed twice", referencePath, i+1, m[1])
		}
		rows[m[1]] = cells
	}
	return rows
}

// splitRow splits a Markdown table row into its trimmed cells; `\|` stays
// inside a cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func TestReference_ListsEveryKey(t *testing.T) {
	rows := referenceRows(t)
	keys := confKeys(Default())
	known := map[string]bool{}
	for _, k := range keys {
		if retired[k.name] {
			continue
		}
		known[k.name] = true
		cells, ok := rows[k.name]
		if !ok {
			t.Errorf("%s is a configuration key that %s does not list", k.name, referencePath)
			continue
		}
		env, flag, def := cells[1], cells[2], cells[3]
		if k.env == "" {
			if env != "TOML only" || flag != "TOML only" {
				t.Errorf("%s: environment %q, flag %q; want TOML only for both (a map section)", k.name, env, flag)
			}
		} else {
			if env != "`"+k.env+"`" {
				t.Errorf("%s: environment %s, want `%s`", k.name, env, k.env)
			}
			own := "`--" + strings.ReplaceAll(k.name, "_", "-") + "`"
			if flag != "`--set`" && (strings.Contains(k.name, ".") || flag != own) {
				t.Errorf("%s: flag %s, want `--set` or, for a top-level key with a flag of its own, %s", k.name, flag, own)
			}
		}
		if want, ok := docDefault(k.val); ok && !strings.Contains(def, "`"+want+"`") {
			t.Errorf("%s: the reference's default is %q; the code's is `%s`", k.name, def, want)
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("%s lists %s, which is not a configuration key", referencePath, name)
		}
	}
}

// TestReference_EnvNamesAreRead checks the names the reference derives
// against the ones applyEnv and Set actually match.
func TestReference_EnvNamesAreRead(t *testing.T) {
	c := Default()
	read := map[string]bool{}
	_ = walkFields(reflect.ValueOf(&c).Elem(), "ASKWPD_", func(name string, f reflect.Value) error {
		if f.Kind() != reflect.Map {
			read[name] = true
		}
		return nil
	})
	derived := map[string]bool{}
	for _, k := range confKeys(c) {
		if k.env != "" {
			derived[k.env] = true
			if !read[k.env] {
				t.Errorf("%s: no setting reads %s", k.name, k.env)
			}
		}
	}
	for name := range read {
		if !derived[name] {
			t.Errorf("%s is read from the environment but missing from the derived names", name)
		}
	}
}

// TestConffile_ListsEveryKeyAtItsDefault holds the conffile to what its
// header says: every key, commented out, at its default, except listen.
// Uncommenting every key must give a file the daemon accepts.
func TestConffile_ListsEveryKeyAtItsDefault(t *testing.T) {
	raw, err := os.ReadFile(conffilePath)
	if err != nil {
		t.Fatalf("the conffile: %v", err)
	}
	// The same uncommenting as scripts/deb-test.sh's.
	all := regexp.MustCompile(`(?m)^#([a-z_]+ = )`).ReplaceAllString(string(raw), "$1")
	var got Config
	md, err := toml.Decode(all, &got)
	if err != nil {
		t.Fatalf("the conffile, every key uncommented: %v", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		t.Errorf("the conffile has keys the daemon does not know: %v", und)
	}
	set := map[string]bool{}
	for _, k := range md.Keys() {
		set[k.String()] = true
	}
	want := confKeys(Default())
	have := confKeys(got)
	for i, k := range want {
		if k.env == "" || retired[k.name] {
			continue // a map section's keys are described in a comment
		}
		if !set[k.name] {
			t.Errorf("the conffile does not list %s", k.name)
			continue
		}
		if k.name == "listen" {
			continue // the package's one deliberate difference
		}
		if d, ok := docDefault(k.val); ok && !reflect.DeepEqual(have[i].val.Interface(), k.val.Interface()) {
			t.Errorf("the conffile gives %s = %v; its default is %s", k.name, have[i].val.Interface(), d)
		}
	}
}
