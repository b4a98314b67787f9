// Package dnstest runs a DNS server on the loopback interface for tests,
// answering from records held in Go values.
//
// Tests of code that resolves names (the emailcheck validator, or a
// host's own code) point their resolver at [Server.Addr] and need no
// network. The server answers the way a recursive resolver does, so the
// code under test sees what it would see in production:
//
//   - a name in the [Zone] is answered NOERROR with its records of the
//     asked type (MX, A, AAAA, TXT); a [Domain] with a CNAME is answered
//     for every type with the CNAME record followed, when the target is
//     in the zone, by the target's answer, over up to 8 hops (a longer
//     chain or a loop is answered SERVFAIL);
//   - a name in the zone without records of the asked type is answered
//     NODATA: NOERROR, no answer, an SOA record in the authority section
//     whose minimum is [Options].NegativeTTL;
//   - a name not in the zone is answered NXDOMAIN with the SOA record,
//     unless it is an empty non-terminal (a name in the zone lies below
//     it), which is answered NODATA; a CNAME whose target does not exist
//     is answered NXDOMAIN with the CNAME record, as resolvers do (RFC
//     6604);
//   - a wildcard name such as "*.example.com" answers for the names below
//     it that the zone does not hold (RFC 4592);
//   - [Options].Fallback answers names missing from the zone, for
//     generated zones too large to build.
//
// Each [Domain] can also inject faults: a response code (SERVFAIL,
// REFUSED, ...), a dropped query that makes the client time out, extra
// latency, truncation over UDP that forces a retry over TCP, an answer
// that is not a DNS message, or one with the wrong message id.
// [Options].MaxPending and [Options].ReadBuffer make the whole server a
// modest resolver with a finite queue, dropping the queries that overflow
// it ([Server.Dropped] counts those it drops itself). Every
// query is answered in a goroutine of its own, so a slow or dropped name
// does not delay the others: a thousand concurrent queries with 20 ms of
// latency are all answered after about 20 ms.
//
// The zone can change while the server runs ([Server.Set],
// [Server.Delete], [Server.SetLatency]), and the server counts the
// queries it receives ([Server.Queries], [Server.QueryCount]), which lets
// tests check caching and request coalescing.
//
// [Start] is the usual entry point in a test: it starts a server and
// closes it when the test ends. [Server.Close] waits for every goroutine
// of the server to return.
package dnstest
