// Package launchd holds the launchd agent that runs hermesd on macOS; its
// test checks that the plist parses and carries the keys launchd needs.
package launchd

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// value is a plist value: its element name and, for the kinds used here,
// its content.
type value struct {
	kind  string           // string | integer | true | false | array | dict
	text  string           // string, integer
	items []value          // array
	dict  map[string]value // dict
}

// decodeValue reads the value whose start element is start.
func decodeValue(d *xml.Decoder, start xml.StartElement) (value, error) {
	v := value{kind: start.Name.Local}
	switch v.kind {
	case "string", "integer":
		if err := d.DecodeElement(&v.text, &start); err != nil {
			return v, err
		}
		return v, nil
	case "true", "false":
		return v, d.Skip()
	case "array", "dict":
		if v.kind == "dict" {
			v.dict = map[string]value{}
		}
		key := ""
		for {
			tok, err := d.Token()
			if err != nil {
				return v, err
			}
			switch t := tok.(type) {
			case xml.EndElement:
				if v.kind == "dict" && key != "" {
					return v, fmt.Errorf("key %q has no value", key)
				}
				return v, nil
			case xml.StartElement:
				if v.kind == "dict" && key == "" {
					if t.Name.Local != "key" {
						return v, fmt.Errorf("dict holds <%s> where a <key> belongs", t.Name.Local)
					}
					if err := d.DecodeElement(&key, &t); err != nil {
						return v, err
					}
					if _, dup := v.dict[key]; dup {
						return v, fmt.Errorf("duplicate key %q", key)
					}
					continue
				}
				item, err := decodeValue(d, t)
				if err != nil {
					return v, err
				}
				if v.kind == "dict" {
					v.dict[key], key = item, ""
				} else {
					v.items = append(v.items, item)
				}
			}
		}
	}
	return v, fmt.Errorf("unknown plist element <%s>", v.kind)
}

// parsePlist parses a plist document into its top-level value.
func parsePlist(r io.Reader) (value, []string, error) {
	d := xml.NewDecoder(r)
	var comments []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return value{}, comments, errors.New("no <plist> element")
		}
		if err != nil {
			return value{}, comments, err
		}
		switch t := tok.(type) {
		case xml.Comment:
			comments = append(comments, string(t))
		case xml.StartElement:
			if t.Name.Local != "plist" {
				return value{}, comments, fmt.Errorf("root element <%s>, want <plist>", t.Name.Local)
			}
			for {
				tok, err := d.Token()
				if err != nil {
					return value{}, comments, err
				}
				if se, ok := tok.(xml.StartElement); ok {
					v, err := decodeValue(d, se)
					return v, comments, err
				}
			}
		}
	}
}

func TestHermesdPlist(t *testing.T) {
	f, err := os.Open("org.hermes-units.hermesd.plist")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root, comments, err := parsePlist(f)
	if err != nil {
		t.Fatalf("parse plist: %v", err)
	}
	if root.kind != "dict" {
		t.Fatalf("top-level value is <%s>, want <dict>", root.kind)
	}
	str := func(key string) string {
		t.Helper()
		v, ok := root.dict[key]
		if !ok || v.kind != "string" {
			t.Errorf("%s: %+v, want a <string>", key, v)
		}
		return v.text
	}
	if got := str("Label"); got != "org.hermes-units.hermesd" {
		t.Errorf("Label = %q, want org.hermes-units.hermesd (the file name without .plist)", got)
	}
	args := root.dict["ProgramArguments"]
	var argv []string
	for _, it := range args.items {
		argv = append(argv, it.text)
	}
	if args.kind != "array" || len(argv) == 0 || !strings.HasSuffix(argv[0], "/hermesd") ||
		!slices.Contains(argv, "--units") || !slices.Contains(argv, "--state") {
		t.Errorf("ProgramArguments = %q, want hermesd --units DIR --state DIR", argv)
	}
	if ka := root.dict["KeepAlive"]; ka.kind != "dict" || ka.dict["SuccessfulExit"].kind != "false" {
		t.Errorf("KeepAlive = %+v, want {SuccessfulExit: false} (restart on a crash only)", ka)
	}
	for _, key := range []string{"RunAtLoad", "AbandonProcessGroup"} {
		if got := root.dict[key].kind; got != "true" {
			t.Errorf("%s is <%s>, want <true/>", key, got)
		}
	}
	for _, key := range []string{"StandardOutPath", "StandardErrorPath"} {
		if p := str(key); !strings.HasPrefix(p, "/") {
			t.Errorf("%s = %q, want an absolute path (launchd does not expand ~)", key, p)
		}
	}
	if !slices.ContainsFunc(comments, func(c string) bool {
		return strings.Contains(c, "Owned children die through hermes's own supervisor")
	}) {
		t.Errorf("no comment explains that owned children die through hermes's own supervisor")
	}
}
