package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/pelletier/go-toml/v2"
)

// ListMode is how list commands print: a bordered table or one
// "|"-separated line per row (for scripts), as in Iggy's CLI.
type ListMode string

// List modes.
const (
	ListTable ListMode = "table"
	ListList  ListMode = "list"
)

// ParseListMode validates a -l value.
func ParseListMode(s string) (ListMode, error) {
	switch ListMode(strings.ToLower(s)) {
	case ListTable:
		return ListTable, nil
	case ListList:
		return ListList, nil
	}
	return "", fmt.Errorf("invalid list mode %q: want table or list", s)
}

// Table is a header and rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Render writes the table in mode: bordered, or "|"-joined lines without
// the header.
func (t *Table) Render(w io.Writer, mode ListMode) error {
	if mode == ListList {
		var b strings.Builder
		for _, r := range t.Rows {
			b.WriteString(strings.Join(r, "|"))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	_, err := io.WriteString(w, t.String())
	return err
}

// String renders the bordered form:
//
//	+----+------+
//	| ID | Name |
//	+====+======+
//	| 0  | prod |
//	+----+------+
//
// Cells containing newlines span several lines.
func (t *Table) String() string {
	cols := len(t.Header)
	for _, r := range t.Rows {
		cols = max(cols, len(r))
	}
	widths := make([]int, cols)
	measure := func(r []string) {
		for i, c := range r {
			for _, line := range strings.Split(c, "\n") {
				widths[i] = max(widths[i], runewidth.StringWidth(line))
			}
		}
	}
	measure(t.Header)
	for _, r := range t.Rows {
		measure(r)
	}
	var b strings.Builder
	rule := func(ch string) {
		b.WriteByte('+')
		for _, w := range widths {
			b.WriteString(strings.Repeat(ch, w+2))
			b.WriteByte('+')
		}
		b.WriteByte('\n')
	}
	row := func(r []string) {
		lines := 1
		split := make([][]string, cols)
		for i := range cols {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			split[i] = strings.Split(cell, "\n")
			lines = max(lines, len(split[i]))
		}
		for l := range lines {
			b.WriteByte('|')
			for i := range cols {
				cell := ""
				if l < len(split[i]) {
					cell = split[i][l]
				}
				b.WriteByte(' ')
				b.WriteString(cell)
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(cell)+1))
				b.WriteByte('|')
			}
			b.WriteByte('\n')
		}
	}
	rule("-")
	if len(t.Header) > 0 {
		row(t.Header)
		rule("=")
	}
	for _, r := range t.Rows {
		row(r)
		rule("-")
	}
	return b.String()
}

// OutputFormat is the format of commands with richer output (stats).
type OutputFormat string

// Output formats.
const (
	OutTable OutputFormat = "table"
	OutList  OutputFormat = "list"
	OutJSON  OutputFormat = "json"
	OutTOML  OutputFormat = "toml"
)

// ParseOutputFormat validates a -o value.
func ParseOutputFormat(s string) (OutputFormat, error) {
	switch f := OutputFormat(strings.ToLower(s)); f {
	case OutTable, OutList, OutJSON, OutTOML:
		return f, nil
	}
	return "", fmt.Errorf("invalid output format %q: want table, list, json or toml", s)
}

// Property is one name/value line of a property table.
type Property struct {
	Name  string
	Value string
}

// renderProperties prints name/value pairs in format; v is the structured
// value used for json and toml.
func renderProperties(w io.Writer, f OutputFormat, header [2]string, props []Property, v any) error {
	switch f {
	case OutJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case OutTOML:
		b, err := toml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	t := Table{Header: header[:]}
	for _, p := range props {
		t.Add(p.Name, p.Value)
	}
	mode := ListTable
	if f == OutList {
		mode = ListList
	}
	return t.Render(w, mode)
}

// timeText renders a µs Unix timestamp in UTC.
func timeText(us uint64) string {
	if us == 0 {
		return "-"
	}
	return time.UnixMicro(int64(us)).UTC().Format("2006-01-02 15:04:05")
}

// timeTextMicro renders a µs timestamp with microseconds.
func timeTextMicro(us uint64) string {
	return time.UnixMicro(int64(us)).UTC().Format("2006-01-02 15:04:05.000000")
}
