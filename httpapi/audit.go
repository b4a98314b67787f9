package httpapi

import (
	"context"

	"github.com/validmail/validmail/store"
)

// addAudit records in the calling account's audit log ([Config.Audit])
// what its key did; a failure is logged, the change it records stands.
func (h *Handler) addAudit(ctx context.Context, c *call, action, detail string) {
	if h.audit == nil {
		return
	}
	e := store.AuditEntry{AccountID: c.key.AccountID, Time: h.now(), Actor: "key " + c.key.Prefix + "…", Action: action, Detail: detail}
	if err := h.audit.AddAudit(ctx, e); err != nil && h.logger != nil {
		h.logger.ErrorContext(ctx, "httpapi: audit entry not written", "account_id", e.AccountID, "action", action, "err", err)
	}
}

// auditKey names a key in the audit log: its prefix and name.
func auditKey(k store.Key) string {
	if k.Name == "" {
		return k.Prefix + "…"
	}
	return k.Prefix + "… " + k.Name
}
