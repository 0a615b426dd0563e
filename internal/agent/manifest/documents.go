package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// document is one YAML or JSON document of a source.
type document struct {
	data  []byte
	index int  // 1-based, counting non-blank documents
	line  int  // 1-based line of the source where the document starts
	json  bool // data is JSON, not YAML
	err   error
}

func (d document) name() string {
	return fmt.Sprintf("document %d (line %d)", d.index, d.line)
}

// splitDocuments cuts a source into documents: a stream of JSON objects when
// it starts with "{", otherwise YAML documents separated by "---" lines.
func splitDocuments(data []byte) []document {
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		return splitJSONStream(data)
	}
	return splitYAMLStream(data)
}

func splitJSONStream(data []byte) []document {
	var docs []document
	decoder := json.NewDecoder(bytes.NewReader(data))
	for {
		start := int(decoder.InputOffset())
		start += len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n"))
		doc := document{index: len(docs) + 1, line: lineAt(data, start), json: true}
		var raw json.RawMessage
		err := decoder.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			doc.err = err
			return append(docs, doc)
		}
		doc.data = raw
		docs = append(docs, doc)
	}
}

func splitYAMLStream(data []byte) []document {
	var docs []document
	var current bytes.Buffer
	startLine := 1
	flush := func(nextLine int) {
		if len(bytes.TrimSpace(current.Bytes())) > 0 {
			docs = append(docs, document{data: bytes.Clone(current.Bytes()), index: len(docs) + 1, line: startLine})
		}
		current.Reset()
		startLine = nextLine
	}
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		lineNumber := i + 1
		separator, err := isDocumentSeparator(line)
		if err != nil {
			flush(lineNumber)
			return append(docs, document{index: len(docs) + 1, line: lineNumber, err: err})
		}
		if separator {
			flush(lineNumber + 1)
			continue
		}
		current.Write(line)
	}
	flush(0)
	return docs
}

// isDocumentSeparator reports whether line is "---" (optionally followed by
// a comment) or the "..." end-of-document marker. Content after "---" on the
// same line is refused: the YAML converter would silently drop every
// document after the first of a chunk.
func isDocumentSeparator(line []byte) (bool, error) {
	trimmed := bytes.TrimRight(line, " \t\r\n")
	if string(trimmed) == "..." {
		return true, nil
	}
	rest, found := bytes.CutPrefix(trimmed, []byte("---"))
	if !found {
		return false, nil
	}
	if len(rest) == 0 {
		return true, nil
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false, nil // "----" or "---x": ordinary content
	}
	// Only YAML's blanks, as trimmed above: TrimSpace would also take a
	// vertical tab or form feed and could leave nothing to look at.
	if rest = bytes.TrimLeft(rest, " \t"); rest[0] == '#' {
		return true, nil
	}
	return false, errors.New(`content after the document separator "---": start the document on the next line`)
}

// lineAt returns the 1-based line number of byte offset in data.
func lineAt(data []byte, offset int) int {
	return bytes.Count(data[:min(offset, len(data))], []byte("\n")) + 1
}
