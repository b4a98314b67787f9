// Package lists reads a customer's list of addresses (a CSV file of any
// columns, or one address a line) and submits it to a [jobs.Queue] as one
// batch of one job per unique address.
//
// [Read] checks the whole file within its [Options]' bounds (bytes, rows,
// row length, columns, no NUL), decoded to UTF-8 by [charset] (UTF-8,
// UTF-16 with a byte order mark, else Windows-1252 line by line), while
// copying it into a temporary
// [Spool], so that nothing is written to the backend for a file that is
// refused, and memory holds one row at a time. [Spool.Preview] counts what
// the list will cost; [Submit] hands the rows to the driver's
// [jobs.ListWriter] a chunk at a time and commits them: the charge for the
// unique addresses and the batch's visibility are one atomic step.
//
// Rows whose address cell is the same after trimming and case-folding
// ([Key]) share one job and one credit; rows whose cell is not an address
// get no job and cost nothing. Every row is kept with its columns, so that
// results come back in the uploaded order with the customer's data.
package lists
