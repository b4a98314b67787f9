package lists

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ErrBadSpool reports spooled bytes given to [Restore] that are not what
// their [SpoolState] describes.
var ErrBadSpool = errors.New("lists: spooled rows do not match their description")

// SpoolState describes a spool's rows, so that [Restore] can read them
// again elsewhere (another process, from a shared store).
type SpoolState struct {
	Header                       []string
	HasHeader                    bool
	Column                       int
	Rows, Addresses, InvalidRows int
	Size                         int64
	Encoding                     string `json:",omitempty"`
}

// State returns the description of the spool's rows.
func (sp *Spool) State() SpoolState {
	return SpoolState{Header: slices.Clone(sp.Header), HasHeader: sp.HasHeader, Column: sp.Column,
		Rows: sp.Rows, Addresses: sp.Addresses, InvalidRows: sp.InvalidRows, Size: sp.Size, Encoding: sp.Encoding}
}

// WriteTo writes the spool's rows, encoded as the spool keeps them, to w:
// what [Restore] reads.
func (sp *Spool) WriteTo(w io.Writer) (int64, error) {
	if sp.f == nil {
		return 0, errors.New("lists: spool closed")
	}
	return io.Copy(w, io.NewSectionReader(sp.f, 0, sp.Size))
}

// Restore reads a spool's rows, as [Spool.WriteTo] wrote them, from r into
// a new spool (in o's TempDir), checking them against st: exactly st.Size
// bytes of st.Rows rows, st.Addresses of them addresses. The caller
// closes the spool.
func Restore(ctx context.Context, r io.Reader, st SpoolState, o *Options) (*Spool, error) {
	opts := o.withDefaults()
	if st.Size < 0 || st.Size > opts.MaxBytes*2 || st.Rows < 1 || st.Rows > opts.MaxRows || st.Column < 0 ||
		st.Column >= max(len(st.Header), 1) || st.Addresses+st.InvalidRows != st.Rows {
		return nil, ErrBadSpool
	}
	f, err := os.CreateTemp(opts.TempDir, "validmail-list-*")
	if err != nil {
		return nil, fmt.Errorf("lists: spool: %w", err)
	}
	sp := &Spool{f: f, Header: slices.Clone(st.Header), HasHeader: st.HasHeader, Column: st.Column,
		Rows: st.Rows, Addresses: st.Addresses, InvalidRows: st.InvalidRows, Size: st.Size, Encoding: st.Encoding}
	if os.Remove(f.Name()) != nil {
		sp.name = f.Name()
	}
	ok := false
	defer func() {
		if !ok {
			sp.Close()
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	n, err := io.Copy(bw, io.LimitReader(r, st.Size+1))
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("lists: restore: %w", err)
	}
	if n != st.Size {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrBadSpool, n, st.Size)
	}
	// Every row decodes, and the addresses are counted as described.
	addresses := 0
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, st.Size), 64<<10)
	for i := range st.Rows {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row, err := decodeRow(br)
		if err != nil {
			return nil, fmt.Errorf("%w: row %d: %v", ErrBadSpool, i, err)
		}
		if row.Key != "" {
			addresses++
		}
	}
	if _, err := br.ReadByte(); err != io.EOF || addresses != st.Addresses {
		return nil, fmt.Errorf("%w: rows or addresses differ", ErrBadSpool)
	}
	ok = true
	return sp, nil
}
