package dashboard

import (
	"errors"
	"net/http"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
)

// batchDeleteData is the deletion's confirmation page's data.
type batchDeleteData struct {
	batchRow
	Rows int // a list's uploaded rows; 0 for a batch that is not a list
}

// deleteBatchPage asks to confirm a batch's deletion.
func (d *Dashboard) deleteBatchPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	data := batchDeleteData{batchRow: d.row(b)}
	if info, err := d.cfg.Queue.List(r.Context(), a.ID, b.ID); err == nil {
		data.Rows = info.Rows
	}
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "batchdelete", page{Title: "Delete " + data.Label(), Nav: "batches", Email: a.Email, Data: data})
}

// deleteBatch erases a batch, its results and a list's rows, then shows
// the batches.
func (d *Dashboard) deleteBatch(w http.ResponseWriter, r *http.Request, a store.Account) {
	b, ok := d.batch(w, r, a)
	if !ok {
		return
	}
	err := d.cfg.Queue.DeleteBatch(r.Context(), a.ID, b.ID)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		d.fail(w, r, http.StatusNotFound, "There is no such batch.")
		return
	case errors.Is(err, jobs.ErrNoDelete):
		d.fail(w, r, http.StatusNotFound, "Batches cannot be deleted on this deployment; they go after the retention.")
		return
	case err != nil:
		d.backendError(w, r, "delete batch", err)
		return
	}
	d.flash(r.Context(), d.row(b).Label()+" is deleted: its results and rows are gone.")
	d.redirect(w, r, "/batches")
}
