// Package charset reads a customer's text file, in whatever encoding a
// spreadsheet or an editor saved it, as UTF-8.
//
// A byte order mark names the encoding: UTF-8, or UTF-16 little or big
// endian. UTF-16 without one is recognised by the zero bytes of its ASCII
// characters. Any other file is read a line at a time: a line that is
// valid UTF-8 is kept as it is, any other is read as Windows-1252 (the
// superset of Latin-1 that Excel's "CSV (Comma delimited)" and most
// Windows programs write), so that a file whose lines were pasted together
// from both keeps both readable. Bytes that mean nothing in the encoding
// become U+FFFD. Memory holds at most one buffer ([BufferSize]) of the
// file whatever its length.
package charset

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// BufferSize is the most a [Reader] holds of its source at once. A line
// longer than this is judged a buffer at a time.
const BufferSize = 64 << 10

// Names of the encodings a [Reader] reports.
const (
	UTF8        = "UTF-8"
	UTF16       = "UTF-16"
	Windows1252 = "Windows-1252"
	// Mixed: lines of UTF-8 beyond ASCII and lines of Windows-1252.
	Mixed = "UTF-8 and Windows-1252"
)

// Reader reads a file as UTF-8 text. Its zero value is not usable; call
// [NewReader].
type Reader struct {
	br      *bufio.Reader
	started bool
	utf16   io.Reader // the UTF-16 decoder, once recognised
	bom     bool      // a UTF-8 byte order mark: no line is Windows-1252
	out     []byte    // decoded bytes not yet returned
	sawUTF8 bool      // a line of UTF-8 beyond ASCII
	sawCP   bool      // a line read as Windows-1252
}

// NewReader returns a Reader of r's text.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, BufferSize)}
}

// Encoding names the encoding read so far: [UTF8] (plain ASCII too),
// [UTF16], [Windows1252] or [Mixed].
func (r *Reader) Encoding() string {
	switch {
	case r.utf16 != nil:
		return UTF16
	case r.sawCP && r.sawUTF8:
		return Mixed
	case r.sawCP:
		return Windows1252
	}
	return UTF8
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if !r.started {
		r.started = true
		if err := r.start(); err != nil {
			return 0, err
		}
	}
	if r.utf16 != nil {
		return r.utf16.Read(p)
	}
	for len(r.out) == 0 {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// start reads the byte order mark, or guesses UTF-16 without one from
// what has arrived of the first 512 bytes (at least 4), so that a pipe's
// first line is read without waiting for more.
func (r *Reader) start() error {
	if _, err := r.br.Peek(4); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	head, _ := r.br.Peek(min(r.br.Buffered(), 512))
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		r.br.Discard(3)
		r.bom = true
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		r.utf16 = transform.NewReader(r.br, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		r.utf16 = transform.NewReader(r.br, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder())
	default:
		if order, ok := utf16WithoutBOM(head); ok {
			r.utf16 = transform.NewReader(r.br, unicode.UTF16(order, unicode.IgnoreBOM).NewDecoder())
		}
	}
	return nil
}

// utf16WithoutBOM reports whether b looks like UTF-16 text without a byte
// order mark, and in which byte order: at least half of its first
// characters are visible ASCII, whose high byte is zero, and no pair reads
// as one in the other order.
func utf16WithoutBOM(b []byte) (unicode.Endianness, bool) {
	n := len(b) &^ 1
	if n < 4 {
		return unicode.LittleEndian, false
	}
	graphicLE, graphicBE := 0, 0
	for i := 0; i < n; i += 2 {
		if b[i+1] == 0 && b[i] > ' ' && b[i] < 0x7f {
			graphicLE++
		}
		if b[i] == 0 && b[i+1] > ' ' && b[i+1] < 0x7f {
			graphicBE++
		}
	}
	pairs := n / 2
	switch {
	case graphicLE*2 >= pairs && graphicBE == 0:
		return unicode.LittleEndian, true
	case graphicBE*2 >= pairs && graphicLE == 0:
		return unicode.BigEndian, true
	}
	return unicode.LittleEndian, false
}

// fill decodes the next line (or the next buffer of a longer line) into
// r.out.
func (r *Reader) fill() error {
	// Bytes are asked for only until a line end arrives, so that a line
	// from a pipe or a terminal is read as soon as it is whole.
	var buf []byte
	var err error
	for n := 1; ; n = len(buf) + 1 {
		buf, err = r.br.Peek(n)
		if err != nil {
			break
		}
		buf, _ = r.br.Peek(r.br.Buffered())
		if bytes.IndexByte(buf, '\n') >= 0 || len(buf) == r.br.Size() {
			break
		}
	}
	if len(buf) == 0 {
		if err == nil || errors.Is(err, bufio.ErrBufferFull) {
			err = io.EOF
		}
		return err
	}
	// The lines buffered are decoded together, each on its own when they
	// are not all UTF-8.
	var chunk []byte
	switch i := bytes.LastIndexByte(buf, '\n'); {
	case i >= 0:
		chunk = buf[:i+1]
	case err == nil:
		// A full buffer without a line end: a character cut at its end
		// is left for the next buffer.
		chunk = buf[:len(buf)-partialRune(buf)]
	default:
		chunk = buf // the file's last line
	}
	r.out = r.out[:0]
	if utf8.Valid(chunk) {
		r.sawUTF8 = r.sawUTF8 || !isASCII(chunk)
		r.out = append(r.out, chunk...)
	} else {
		for rest := chunk; len(rest) > 0; {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line = rest[:i+1]
			}
			rest = rest[len(line):]
			r.appendLine(line)
		}
	}
	r.br.Discard(len(chunk))
	return nil
}

// appendLine decodes one line into r.out: as it is when it is UTF-8,
// else as Windows-1252, or with U+FFFD for what is not UTF-8 after a
// UTF-8 byte order mark.
func (r *Reader) appendLine(line []byte) {
	switch {
	case utf8.Valid(line):
		r.sawUTF8 = r.sawUTF8 || !isASCII(line)
		r.out = append(r.out, line...)
	case r.bom:
		r.out = append(r.out, bytes.ToValidUTF8(line, []byte("\uFFFD"))...)
	default:
		r.sawCP = true
		for _, c := range line {
			if c < utf8.RuneSelf {
				r.out = append(r.out, c)
				continue
			}
			r.out = utf8.AppendRune(r.out, charmap.Windows1252.DecodeByte(c))
		}
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// partialRune returns how many of b's last bytes begin a UTF-8 character
// that b cuts short (0 to 3), so that a line longer than the buffer is not
// misread at the cut.
func partialRune(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 { // a leading byte
			if !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}
