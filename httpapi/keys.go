package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/validmail/validmail/store"
)

// maxKeyName bounds a key's name.
const maxKeyName = 100

type createKeyRequest struct {
	Name        string    `json:"name"`
	Permissions *[]string `json:"permissions"`
}

// keyView is a key as the API shows it: never its hash.
type keyView struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Prefix      string             `json:"prefix"`
	Permissions []store.Permission `json:"permissions"`
	CreatedAt   string             `json:"created_at"`
	LastUsedAt  *string            `json:"last_used_at"`
	RevokedAt   *string            `json:"revoked_at"`
}

func viewKey(k store.Key) keyView {
	perms := k.Permissions
	if perms == nil {
		perms = []store.Permission{}
	}
	return keyView{
		ID:          k.ID,
		Name:        k.Name,
		Prefix:      k.Prefix,
		Permissions: perms,
		CreatedAt:   formatTime(k.CreatedAt),
		LastUsedAt:  formatTimePtr(k.LastUsedAt),
		RevokedAt:   formatTimePtr(k.RevokedAt),
	}
}

type createdKeyResponse struct {
	keyView
	// Key is the secret, shown this once.
	Key       string `json:"key"`
	RequestID string `json:"requestId"`
}

type keyResponse struct {
	keyView
	RequestID string `json:"requestId"`
}

type keyListResponse struct {
	Keys      []keyView `json:"keys"`
	RequestID string    `json:"requestId"`
}

// createKey serves POST /api/v1/keys. A key can grant only permissions it
// carries itself.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, c *call) {
	body, ok := h.readBody(w, r, c)
	if !ok {
		return
	}
	var req createKeyRequest
	if len(body) > 0 && !decodeStrict(w, c, body, &req) {
		return
	}
	if len(req.Name) > maxKeyName {
		writeProblem(w, c, CodeInvalidBody, "The name is longer than "+strconv.Itoa(maxKeyName)+" bytes.")
		return
	}
	if !cleanText(req.Name) {
		writeProblem(w, c, CodeInvalidBody, "The name must be text without control characters.")
		return
	}
	perms := store.SignupPermissions()
	if req.Permissions != nil {
		if len(*req.Permissions) == 0 {
			writeProblem(w, c, CodeInvalidBody, "A key needs at least one permission; leave permissions out for the default set.")
			return
		}
		perms = make([]store.Permission, 0, len(*req.Permissions))
		for _, s := range *req.Permissions {
			p, err := store.ParsePermission(s)
			if err != nil {
				writeProblem(w, c, CodeInvalidBody, "Unknown permission "+strconv.Quote(s)+".")
				return
			}
			if slices.Contains(perms, p) {
				writeProblem(w, c, CodeInvalidBody, "The permission "+strconv.Quote(s)+" is listed twice.")
				return
			}
			perms = append(perms, p)
		}
	}
	for _, p := range perms {
		if !c.key.Can(p) {
			writeProblemDoc(w, c, problem{
				Code:       CodePermissionDenied,
				Detail:     "A key cannot grant the " + string(p) + " permission it lacks.",
				Permission: string(p),
			})
			return
		}
	}
	k, secret, err := h.accounts.CreateKey(r.Context(), store.CreateKeyParams{
		AccountID:   c.key.AccountID,
		Name:        req.Name,
		Permissions: perms,
		MaxActive:   h.maxKeys,
	})
	if errors.Is(err, store.ErrKeyLimit) {
		writeProblem(w, c, CodeKeyLimitReached, h.keyLimitDetail(r.Context(), c.key.AccountID))
		return
	}
	if err != nil {
		h.backendError(w, c, "create key", err)
		return
	}
	h.addAudit(r.Context(), c, "key.created", auditKey(k))
	h.writeJSON(w, c, http.StatusCreated, createdKeyResponse{keyView: viewKey(k), Key: secret, RequestID: c.id})
}

// keyLimitDetail explains a refused key: with the account's active keys
// when they can be counted, else with the bound.
func (h *Handler) keyLimitDetail(ctx context.Context, accountID string) string {
	ks, err := h.accounts.ListKeys(ctx, accountID)
	if err != nil {
		return "The account holds the most active keys allowed (" + strconv.Itoa(h.maxKeys) + "); revoke one first."
	}
	active := 0
	for _, k := range ks {
		if !k.Revoked() {
			active++
		}
	}
	return "The account holds " + strconv.Itoa(active) + " active keys, the most allowed; revoke one first."
}

// listKeys serves GET /api/v1/keys.
func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request, c *call) {
	ks, err := h.accounts.ListKeys(r.Context(), c.key.AccountID)
	if err != nil {
		h.backendError(w, c, "list keys", err)
		return
	}
	views := make([]keyView, len(ks))
	for i, k := range ks {
		views[i] = viewKey(k)
	}
	h.writeJSON(w, c, http.StatusOK, keyListResponse{Keys: views, RequestID: c.id})
}

// revokeKey serves DELETE /api/v1/keys/{id} and answers the revoked key.
// A key may revoke only keys whose permissions it holds itself (the rule
// of creation), so a key holding only keys cannot lock the account's
// owners out, and revokes itself only with ?confirm=true.
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	id := r.PathValue("id")
	before, err := h.accounts.ListKeys(ctx, c.key.AccountID)
	if err != nil {
		h.backendError(w, c, "list keys", err)
		return
	}
	for _, k := range before {
		if k.ID != id {
			continue
		}
		for _, p := range k.Permissions {
			if !c.key.Can(p) {
				writeProblemDoc(w, c, problem{
					Code:       CodePermissionDenied,
					Detail:     "A key cannot revoke a key holding the " + string(p) + " permission it lacks.",
					Permission: string(p),
				})
				return
			}
		}
		if k.ID == c.key.ID && r.URL.Query().Get("confirm") != "true" {
			writeProblem(w, c, CodeConfirmationRequired, "This is the key making the request; add ?confirm=true to revoke it.")
			return
		}
	}
	if err := h.accounts.RevokeKey(ctx, c.key.AccountID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeProblem(w, c, CodeNotFound, "No API key with this id.")
			return
		}
		h.backendError(w, c, "revoke key", err)
		return
	}
	h.addAudit(ctx, c, "key.revoked", id)
	if h.keys != nil {
		h.keys.forget(id)
	}
	ks, err := h.accounts.ListKeys(ctx, c.key.AccountID)
	if err != nil {
		h.backendError(w, c, "list keys", err)
		return
	}
	for _, k := range ks {
		if k.ID == id {
			h.writeJSON(w, c, http.StatusOK, keyResponse{keyView: viewKey(k), RequestID: c.id})
			return
		}
	}
	writeProblem(w, c, CodeNotFound, "No API key with this id.")
}
