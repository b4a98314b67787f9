package lists_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/validmail/validmail/jobs/lists"
)

// BenchmarkRead reads a list of 100,000 rows (five columns), in UTF-8 and
// as Excel saves it in Windows-1252, into a spool.
func BenchmarkRead(b *testing.B) {
	for _, enc := range []struct {
		name  string
		name2 string
	}{{"UTF-8", "Zoë"}, {"Windows-1252", "Zo\xeb"}} {
		var file bytes.Buffer
		file.WriteString("First,Last,Email,Company,Joined\r\n")
		for i := range 100_000 {
			fmt.Fprintf(&file, "%s,Doe %d,user%d@example.org,ACME %d,2026-01-01\r\n", enc.name2, i, i, i%100)
		}
		b.Run(enc.name, func(b *testing.B) {
			b.SetBytes(int64(file.Len()))
			for b.Loop() {
				sp, err := lists.Read(b.Context(), bytes.NewReader(file.Bytes()), nil)
				if err != nil {
					b.Fatal(err)
				}
				if sp.Rows != 100_000 {
					b.Fatalf("%d rows", sp.Rows)
				}
				sp.Close()
			}
		})
	}
}
