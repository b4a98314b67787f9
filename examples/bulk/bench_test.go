package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkReadCSV measures parsing CSV rows, per row.
func BenchmarkReadCSV(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("id,name,email,note\r\n")
	for i := range 10_000 {
		fmt.Fprintf(&sb, "%d,\"Name, %d\",u%d@d%d.example.net,some note\r\n", i, i, i, i%500)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		in, err := openInput(strings.NewReader(text), "")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := in.next(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10_000), "ns/row")
}

// BenchmarkWrite measures writing one row with its result.
func BenchmarkWrite(b *testing.B) {
	f := format{csv: true, comma: ',', header: []string{"id", "name", "email"}, column: 2, width: 3}
	r := row{line: 2, email: "ann+x@gmail.com", fields: []string{"1", "Ann", "ann+x@gmail.com"}}
	res := likely(r.email)
	for _, name := range []string{"csv", "jsonl"} {
		b.Run(name, func(b *testing.B) {
			w, err := newRowWriter(io.Discard, name, f)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := w.write(r, res); err != nil {
					b.Fatal(err)
				}
			}
			w.flush()
		})
	}
}
