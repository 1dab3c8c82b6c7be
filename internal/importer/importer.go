// Package importer turns the service definitions people already have
// (systemd unit files, a process-compose.yaml, a PM2 ecosystem file) into
// hermes unit files, for hermesctl import.
//
// Each converter maps every key it can to a unit key (a File, loaded
// by the units decoder in the tests) and reports every key it
// cannot, with the file, the key and why, as a Note: nothing of the
// source is dropped silently. A key that maps only approximately is
// mapped and reported too. The converters read; they neither start
// programs nor evaluate code (a PM2 .config.js is parsed as a plain object
// literal, never run).
//
// Render writes a Unit as a unit file whose header comment lists the
// unit's notes, so that the file itself says what did not come along.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/hermes-units/hermes/internal/word"
)

// Format is a kind of source file.
type Format string

const (
	Systemd        Format = "systemd"
	ProcessCompose Format = "process-compose"
	PM2            Format = "pm2"
)

// Formats are the formats Import reads, in the order help lists them.
var Formats = []Format{Systemd, ProcessCompose, PM2}

var (
	// ErrFormat reports a source whose format is unknown, or that is not
	// what its format says (a process-compose file without processes:).
	ErrFormat = errors.New("unknown source format")
	// ErrSyntax reports a source file that does not parse.
	ErrSyntax = errors.New("source does not parse")
	// ErrName reports a name that cannot become a unit's file name.
	ErrName = errors.New("name cannot be a unit name")
)

// ParseFormat reads a format's name; an unknown one is an error.
func ParseFormat(s string) (Format, error) { return formatWords.Parse(s) }

var formatWords = word.Strings("source format", Formats...).Wrap(ErrFormat)

// Detect tells a source's format from its name: .service and .timer are
// systemd's, .json, .js, .cjs and .mjs PM2's, .yaml and .yml
// process-compose's.
func Detect(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".service", ".timer":
		return Systemd, nil
	case ".json", ".js", ".cjs", ".mjs":
		return PM2, nil
	case ".yaml", ".yml":
		return ProcessCompose, nil
	}
	return "", fmt.Errorf("%s: %w: name it .service/.timer (systemd), .yaml (process-compose) or .json/.config.js (PM2), or pass --from", path, ErrFormat)
}

// Source is one file to import: its path (for names and notes) and
// content.
type Source struct {
	Path string
	Data []byte
}

// Unit is one hermes unit an import produced.
type Unit struct {
	Name   string // the unit's name: its file is Name.yaml
	Source string // the path of the file it came from
	File   File   // the unit's keys
}

// Note is a key of a source that is not mapped, or mapped only in part:
// where it is and why.
type Note struct {
	File string // the source file
	Unit string // the unit it concerns; "" for a key of the whole file
	Key  string // the key, as the source spells it ("Service.User", "processes.web.shutdown.command", "apps[0].watch")
	Why  string
}

func (n Note) String() string { return fmt.Sprintf("%s: %s: %s", n.File, n.Key, n.Why) }

// Result is what an import produced: units in the order of the source,
// and every note.
type Result struct {
	Units []Unit
	Notes []Note
}

// Import converts srcs of format f. Sources of one format convert
// together: systemd's NAME.timer joins NAME.service. An error (a file
// that does not parse, a name that cannot be a unit's) stops the import;
// keys that cannot be mapped are notes, not errors.
func Import(f Format, srcs []Source) (*Result, error) {
	switch f {
	case Systemd:
		return importSystemd(srcs)
	case ProcessCompose:
		return importEach(srcs, composeFile)
	case PM2:
		return importEach(srcs, pm2File)
	}
	return nil, fmt.Errorf("%w %q", ErrFormat, f)
}

// importEach converts srcs one by one with file, for the formats whose
// files convert alone, into one Result; the first error stops it.
func importEach(srcs []Source, file func(Source, *Result) error) (*Result, error) {
	res := &Result{}
	for _, src := range srcs {
		if err := file(src, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// unitName is the pattern of a unit's name (units.ValidName's rule),
// compiled on first use.
var unitName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`) })

// cleanName makes name a unit name: runs of other characters become "-".
// It fails when nothing usable is left.
func cleanName(name string) (string, error) {
	if unitName().MatchString(name) {
		return name, nil
	}
	out := regexp.MustCompile(`[^A-Za-z0-9._@-]+`).ReplaceAllString(name, "-")
	out = strings.TrimLeft(out, "._@-")
	if !unitName().MatchString(out) {
		return "", fmt.Errorf("%w: %q", ErrName, name)
	}
	return out, nil
}

// NotesOf are the notes of r about unit name, and those of its whole
// source file.
func (r *Result) NotesOf(u Unit) []Note {
	var out []Note
	for _, n := range r.Notes {
		if n.File == u.Source && (n.Unit == u.Name || n.Unit == "") {
			out = append(out, n)
		}
	}
	return out
}

// Render writes u as a unit file: a header comment naming the source and
// listing notes, then the keys in the unit reference's order, block
// style, lists of words on one line.
func Render(u Unit, notes []Note) ([]byte, error) {
	raw, err := json.Marshal(u.File)
	if err != nil {
		return nil, fmt.Errorf("importer: unit %s: %w", u.Name, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("importer: unit %s: %w", u.Name, err)
	}
	root := doc.Content[0]
	restyle(root)
	head := []string{"Imported from " + u.Source + " by hermesctl import."}
	if len(notes) > 0 {
		head = append(head, "Not carried over, or only in part (hermesctl import printed these too):")
		for _, n := range notes {
			head = append(head, "  "+oneLine(n.Key+": "+n.Why))
		}
	}
	root.HeadComment = strings.Join(head, "\n")
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("importer: unit %s: %w", u.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("importer: unit %s: %w", u.Name, err)
	}
	return b.Bytes(), nil
}

// restyle turns the node tree JSON gave into the house form: block
// mappings, flow lists of scalars, plain scalars where they read back as
// themselves (the encoder quotes a string that would not).
func restyle(n *yaml.Node) {
	n.Style = 0
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "" || n.Tag == "!!str" {
			n.Tag = "!!str"
		}
	case yaml.SequenceNode:
		flow := true
		for _, c := range n.Content {
			restyle(c)
			if c.Kind != yaml.ScalarNode || strings.ContainsAny(c.Value, "\n") {
				flow = false
			}
		}
		if flow {
			n.Style = yaml.FlowStyle
		}
	case yaml.MappingNode:
		for _, c := range n.Content {
			restyle(c)
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Resolve drops the after: and requires: entries that name a unit neither
// imported in r nor known to exist (a unit already in the target
// directory), with a note for each: a unit file naming an undeclared
// unit does not load.
func (r *Result) Resolve(exists func(name string) bool) {
	imported := map[string]bool{}
	for _, u := range r.Units {
		imported[u.Name] = true
	}
	keep := func(u *Unit, key string, list []string) []string {
		var out []string
		for _, d := range list {
			if imported[d] || exists(d) {
				out = append(out, d)
				continue
			}
			r.Notes = append(r.Notes, Note{File: u.Source, Unit: u.Name, Key: key,
				Why: fmt.Sprintf("%s is neither imported nor a unit of the directory: left out; import it too, or add it back once it exists", d)})
		}
		return out
	}
	for i := range r.Units {
		u := &r.Units[i]
		u.File.After = keep(u, "after", u.File.After)
		u.File.Requires = keep(u, "requires", u.File.Requires)
	}
}
