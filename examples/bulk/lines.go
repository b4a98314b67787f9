package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Limits that keep memory bounded whatever the input looks like.
const (
	// maxLineBytes is the longest physical line kept; the rest of a longer
	// line is discarded and the line is reported as malformed.
	maxLineBytes = 1 << 20
	// maxRecordLines and maxRecordBytes bound a CSV record whose quoted
	// field spans several lines. An opening quote that is still open after
	// that is reported as unterminated, and reading resumes on the next
	// line.
	maxRecordLines = 100
	maxRecordBytes = 1 << 20
)

// errLineTooLong marks a physical line longer than maxLineBytes.
var errLineTooLong = errors.New("line longer than 1 MiB (truncated)")

// physLine is one physical line of the input, without its line end (LF or
// CRLF).
type physLine struct {
	text    string
	num     int   // 1-based line number
	end     int64 // input bytes consumed through the end of this line
	tooLong bool  // the line was cut at maxLineBytes
}

// lineReader splits its input (text already decoded: its byte order mark
// is gone) into physical lines, and lets lines be pushed back to be read
// again.
type lineReader struct {
	br      *bufio.Reader
	num     int
	offset  int64
	pending []physLine // pushed back, next first
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line, or io.EOF after the last one. A final line
// without a line end is returned like any other.
func (lr *lineReader) next() (physLine, error) {
	if n := len(lr.pending); n > 0 {
		l := lr.pending[0]
		lr.pending = lr.pending[1:]
		return l, nil
	}
	var (
		buf     []byte
		tooLong bool
		read    int64
	)
	for {
		chunk, err := lr.br.ReadSlice('\n')
		read += int64(len(chunk))
		if !tooLong {
			if room := maxLineBytes + 2 - len(buf); len(chunk) > room {
				buf = append(buf, chunk[:room]...)
				tooLong = true
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return physLine{}, err
		}
		if read == 0 {
			return physLine{}, io.EOF
		}
		break
	}
	lr.num++
	lr.offset += read
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	if len(buf) > maxLineBytes {
		buf = buf[:maxLineBytes]
		tooLong = true
	}
	return physLine{text: string(buf), num: lr.num, end: lr.offset, tooLong: tooLong}, nil
}

// pushBack makes lines the next ones returned, in their order.
func (lr *lineReader) pushBack(lines ...physLine) {
	lr.pending = append(append([]physLine(nil), lines...), lr.pending...)
}
