package dashboard

import (
	"io/fs"
	"net/http"

	"github.com/validmail/validmail/store"
)

// Access is what a console route needs of the request's account: the
// column of the route table ([Dashboard.Routes]) that says, in one place,
// which routes an unconfirmed account may use.
type Access int

// The states a route may need.
const (
	// Public routes serve anyone, signed in or not: the sign-up, sign-in,
	// recovery and confirmation forms, the reference, the static files.
	Public Access = iota
	// SignedIn routes serve any signed-in account, confirmed or not: what
	// lets an unconfirmed account see where it stands (the overview, its
	// account page) and ask for its confirmation link again. None of them
	// creates anything that outlives the confirmation.
	SignedIn
	// Confirmed routes serve only an account whose email is confirmed
	// (by the mailed link, or a reset through the mailed link): keys, the
	// webhook, the bulk and list tools, the batches, the password change.
	// An unconfirmed account gets 403 and the page telling it to confirm.
	Confirmed
)

// String names the state as the operator's guide does.
func (a Access) String() string {
	switch a {
	case Public:
		return "public"
	case SignedIn:
		return "signed in"
	case Confirmed:
		return "confirmed"
	}
	return "unknown"
}

// Route is one line of the console's route table.
type Route struct {
	// Method and Path are the route's pattern, Path relative to
	// [Config.Prefix] and with ServeMux wildcards ({id}).
	Method, Path string
	// Access is what the route needs of the request's account.
	Access Access

	public  http.HandlerFunc
	account func(http.ResponseWriter, *http.Request, store.Account)
}

// routeTable is the console's every route with the state it needs. The
// mux is built from it alone ([Dashboard.routes]), so no route can skip
// its check, and the operator's guide prints the same table.
func (d *Dashboard) routeTable() []Route {
	pub := func(method, path string, h http.HandlerFunc) Route {
		return Route{Method: method, Path: path, Access: Public, public: h}
	}
	in := func(method, path string, h func(http.ResponseWriter, *http.Request, store.Account)) Route {
		return Route{Method: method, Path: path, Access: SignedIn, account: h}
	}
	conf := func(method, path string, h func(http.ResponseWriter, *http.Request, store.Account)) Route {
		return Route{Method: method, Path: path, Access: Confirmed, account: h}
	}
	routes := []Route{
		pub("GET", "/signup", d.signupPage),
		pub("POST", "/signup", d.signup),
		pub("GET", "/login", d.loginPage),
		pub("POST", "/login", d.login),
		pub("GET", "/login/link", d.signinLinkPage),
		pub("POST", "/login/link", d.signinLink),
		pub("POST", "/logout", d.logout),
		pub("GET", "/confirm", d.confirmPage),
		pub("POST", "/confirm", d.confirmEmail),
		pub("GET", "/forgot", d.forgotPage),
		pub("POST", "/forgot", d.forgot),
		pub("GET", "/reset", d.resetPage),
		pub("POST", "/reset", d.reset),
		pub("GET", "/reference", d.referencePage),

		in("GET", "/{$}", d.overview),
		in("GET", "/account", d.accountPage),
		in("POST", "/confirm/resend", d.resendConfirmation),

		conf("POST", "/account/password", d.changePassword),
		conf("POST", "/account/notices", d.saveNotices),
		conf("GET", "/keys", d.keysPage),
		conf("POST", "/keys", d.createKey),
		conf("GET", "/keys/{id}/revoke", d.revokePage),
		conf("POST", "/keys/{id}/revoke", d.revokeKey),
		conf("GET", "/webhook", d.webhookPage),
		conf("POST", "/webhook", d.saveWebhook),
		conf("POST", "/webhook/rotate", d.rotateWebhook),
		conf("POST", "/webhook/test", d.testWebhook),
		conf("GET", "/webhook/delete", d.deleteWebhookPage),
		conf("POST", "/webhook/delete", d.deleteWebhook),
		conf("GET", "/bulk", d.bulkPage),
		conf("POST", "/bulk", d.submitBulk),
		conf("POST", "/bulk/list", d.uploadList),
		conf("GET", "/bulk/list/{token}", d.listPreviewPage),
		conf("POST", "/bulk/list/{token}", d.confirmList),
		conf("POST", "/bulk/list/{token}/column", d.listColumn),
		conf("POST", "/bulk/list/{token}/cancel", d.cancelList),
		conf("GET", "/batches", d.batchesPage),
		conf("GET", "/batches/{id}", d.batchPage),
		conf("GET", "/batches/{id}/progress", d.batchProgress),
		conf("GET", "/batches/{id}/results.csv", d.batchCSV),
		conf("GET", "/batches/{id}/list.csv", d.listCSV),
		conf("GET", "/batches/{id}/results.xlsx", d.batchXLSX),
		conf("GET", "/batches/{id}/list.xlsx", d.listXLSX),
		conf("GET", "/batches/{id}/delete", d.deleteBatchPage),
		conf("POST", "/batches/{id}/delete", d.deleteBatch),
	}
	if d.cfg.Seller != nil {
		routes = append(routes,
			conf("GET", "/billing", d.billingPage),
			conf("POST", "/billing/checkout", d.openCheckout),
			conf("GET", "/billing/receipts/{id}", d.receipt),
		)
	}
	routes = append(routes, d.teamRoutes(pub, conf)...)
	return append(routes, d.twoFactorRoutes(pub, in, conf)...)
}

// Routes returns the console's route table: every route (but the static
// files) with the state of the account it needs, in the order the
// operator's guide lists them.
func (d *Dashboard) Routes() []Route { return d.routeTable() }

// routes builds the mux from the route table: each route wrapped by the
// check its Access names.
func (d *Dashboard) routes(mux *http.ServeMux) {
	p := d.cfg.Prefix
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", cacheStatic(http.FileServerFS(static))))
	for _, rt := range d.routeTable() {
		var h http.HandlerFunc
		switch rt.Access {
		case Public:
			h = rt.public
		case SignedIn:
			h = d.authed(d.roleAllowed(rt.Path, rt.account))
		default:
			h = d.authed(d.confirmed(d.roleAllowed(rt.Path, rt.account)))
		}
		mux.HandleFunc(rt.Method+" "+p+rt.Path, h)
	}
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		d.fail(w, r, http.StatusNotFound, "There is no such page.")
	})
}
