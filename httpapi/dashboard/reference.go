package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The API reference page: the API's OpenAPI document ([Config.OpenAPI])
// read once, at [New], into the operations, their parameters, bodies and
// responses, and the schemas they name, then served as HTML like every
// other page: no script, nothing fetched from elsewhere.

// reference is the API reference as the page shows it.
type reference struct {
	Title, Version, Description string
	Auth                        []refAuth
	Operations                  []refOperation
	Schemas                     []refSchema
	JSONPath                    string // the raw document, when served
}

// refAuth is a security scheme.
type refAuth struct {
	Name, Description string
}

// refOperation is one method on one path.
type refOperation struct {
	Anchor                                         string
	Method, Path, Summary, Description, Permission string
	Auth                                           string // the schemes it takes; "none" for a public one
	Parameters                                     []refField
	Body                                           []refContent
	BodyRequired                                   bool
	Responses                                      []refResponse
}

// refField is a parameter or a schema's property.
type refField struct {
	Name, In    string
	Type        []refPart
	Values      []string // the values an enum or const allows
	Required    bool
	Description string
}

// refPart is a piece of a type's text, linked when it names a schema.
type refPart struct {
	Text, Link string
}

// refContent is a body of one media type.
type refContent struct {
	MediaType string
	Type      []refPart
}

// refResponse is one status an operation answers.
type refResponse struct {
	Status, Description string
	Content             []refContent
}

// refSchema is a named schema and its properties.
type refSchema struct {
	Name, Anchor, Description string
	Type                      []refPart
	Values                    []string
	Fields                    []refField
}

// errReference reports an OpenAPI document the page cannot read.
var errReference = errors.New("dashboard: the OpenAPI document cannot be read")

// maxReferenceDepth bounds the nesting the reader follows, in the
// document and through its references.
const maxReferenceDepth = 64

// newReference reads an OpenAPI 3 document.
func newReference(doc []byte) (*reference, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decodeOrdered(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errReference, err)
	}
	root, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("%w: not a JSON object", errReference)
	}
	rd := refReader{root: root}
	info := root.obj("info")
	ref := &reference{Title: info.str("title"), Version: info.str("version"), Description: info.str("description")}
	schemes := root.obj("components").obj("securitySchemes")
	for _, name := range schemes.names() {
		s := rd.resolve(schemes.get(name), 0)
		desc := s.str("description")
		switch s.str("type") {
		case "apiKey":
			desc = strings.TrimSpace("The " + s.str("name") + " " + s.str("in") + ". " + desc)
		case "http":
			desc = strings.TrimSpace("HTTP " + s.str("scheme") + " authentication (Authorization: " + cap1(s.str("scheme")) + " …). " + desc)
		}
		ref.Auth = append(ref.Auth, refAuth{Name: name, Description: desc})
	}
	global := securityNames(root.arr("security"))
	paths := root.obj("paths")
	for _, p := range paths.names() {
		item := rd.resolve(paths.get(p), 0)
		shared := item.arr("parameters")
		for _, m := range item.names() {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, m) {
				continue
			}
			ref.Operations = append(ref.Operations, rd.operation(p, m, item.obj(m), shared, global))
		}
	}
	schemas := root.obj("components").obj("schemas")
	for _, name := range schemas.names() {
		ref.Schemas = append(ref.Schemas, rd.schema(name, rd.resolve(schemas.get(name), 0)))
	}
	return ref, nil
}

// refReader reads parts of one document.
type refReader struct{ root *omap }

func (rd refReader) operation(path, method string, op *omap, shared []any, global []string) refOperation {
	o := refOperation{
		Method:      strings.ToUpper(method),
		Path:        path,
		Summary:     op.str("summary"),
		Description: op.str("description"),
		Permission:  op.str("x-permission"),
		Auth:        strings.Join(global, " or "),
	}
	o.Anchor = "op-" + anchorOf(cmpOr(op.str("operationId"), o.Method+" "+path))
	if op.get("security") != nil {
		o.Auth = strings.Join(securityNames(op.arr("security")), " or ")
	}
	if o.Auth == "" {
		o.Auth = "none"
	}
	for _, raw := range append(slices.Clone(shared), op.arr("parameters")...) {
		p := rd.resolve(raw, 0)
		f := rd.field(p.str("name"), p.obj("schema"), p.str("description"))
		f.In, f.Required = p.str("in"), p.bool("required")
		o.Parameters = append(o.Parameters, f)
	}
	if body := rd.resolve(op.get("requestBody"), 0); body != nil {
		o.Body, o.BodyRequired = rd.contents(body.obj("content")), body.bool("required")
	}
	responses := op.obj("responses")
	codes := slices.Clone(responses.names())
	slices.Sort(codes) // "default" after the numbers
	for _, code := range codes {
		resp := rd.resolve(responses.get(code), 0)
		o.Responses = append(o.Responses, refResponse{Status: code, Description: resp.str("description"), Content: rd.contents(resp.obj("content"))})
	}
	return o
}

func (rd refReader) contents(c *omap) []refContent {
	var out []refContent
	for _, mt := range c.names() {
		out = append(out, refContent{MediaType: mt, Type: rd.typeOf(c.obj(mt).obj("schema"), 0)})
	}
	return out
}

func (rd refReader) schema(name string, s *omap) refSchema {
	out := refSchema{Name: name, Anchor: schemaAnchor(name), Description: s.str("description"), Type: rd.typeOf(s, 0), Values: values(s)}
	rd.fields(s, &out.Fields, 0)
	return out
}

// fields appends s's properties, with those of the schemas its allOf
// combines.
func (rd refReader) fields(s *omap, out *[]refField, depth int) {
	if s == nil || depth > maxReferenceDepth {
		return
	}
	for _, part := range s.arr("allOf") {
		if p, ok := part.(*omap); ok && p.get("$ref") == nil {
			rd.fields(p, out, depth+1)
		}
	}
	required := map[string]bool{}
	for _, r := range s.arr("required") {
		if name, ok := r.(string); ok {
			required[name] = true
		}
	}
	props := s.obj("properties")
	for _, name := range props.names() {
		p := props.obj(name)
		f := rd.field(name, p, p.str("description"))
		f.Required = required[name]
		*out = append(*out, f)
	}
}

func (rd refReader) field(name string, schema *omap, desc string) refField {
	f := refField{Name: name, Type: rd.typeOf(schema, 0), Description: desc}
	s := schema
	// A property that is one schema and a description names the schema's
	// values too.
	if all := s.arr("allOf"); len(all) == 1 {
		s = rd.resolve(all[0], 0)
	}
	if f.Description == "" {
		f.Description = s.str("description")
	}
	f.Values = values(s)
	return f
}

// values lists the values an enum or a const allows.
func values(s *omap) []string {
	var out []string
	for _, v := range s.arr("enum") {
		out = append(out, scalarText(v))
	}
	if c := s.get("const"); c != nil {
		out = append(out, scalarText(c))
	}
	return out
}

// typeOf describes a schema's type, linking the named schemas it uses.
func (rd refReader) typeOf(s *omap, depth int) []refPart {
	if s == nil {
		return []refPart{{Text: "any"}}
	}
	if depth > maxReferenceDepth {
		return []refPart{{Text: "…"}}
	}
	if r := s.str("$ref"); r != "" {
		if name, ok := strings.CutPrefix(r, "#/components/schemas/"); ok {
			return []refPart{{Text: name, Link: "#" + schemaAnchor(name)}}
		}
		return rd.typeOf(rd.resolve(s, 0), depth+1)
	}
	for _, comb := range []struct{ key, sep string }{{"allOf", " and "}, {"oneOf", " or "}, {"anyOf", " or "}} {
		if parts := s.arr(comb.key); len(parts) > 0 {
			var out []refPart
			for i, p := range parts {
				if i > 0 {
					out = append(out, refPart{Text: comb.sep})
				}
				po, _ := p.(*omap)
				out = append(out, rd.typeOf(po, depth+1)...)
			}
			return out
		}
	}
	var types []string
	switch t := s.get("type").(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if xs, ok := x.(string); ok {
				types = append(types, xs)
			}
		}
	}
	if len(types) == 0 {
		if s.get("properties") != nil {
			return []refPart{{Text: "object"}}
		}
		return []refPart{{Text: "any"}}
	}
	var out []refPart
	for i, t := range types {
		if i > 0 {
			out = append(out, refPart{Text: " or "})
		}
		switch t {
		case "array":
			out = append(out, refPart{Text: "array of "})
			out = append(out, rd.typeOf(s.obj("items"), depth+1)...)
		case "object":
			if ap := s.obj("additionalProperties"); ap != nil {
				out = append(out, refPart{Text: "object of "})
				out = append(out, rd.typeOf(ap, depth+1)...)
			} else {
				out = append(out, refPart{Text: "object"})
			}
		default:
			text := t
			if f := s.str("format"); f != "" {
				text += " (" + f + ")"
			}
			out = append(out, refPart{Text: text})
		}
	}
	return out
}

// resolve follows a local $ref ("#/…"), as far as maxReferenceDepth;
// anything else it returns as it is, and nil for what is not an object.
func (rd refReader) resolve(v any, depth int) *omap {
	o, _ := v.(*omap)
	if o == nil || depth > maxReferenceDepth {
		return o
	}
	r, ok := strings.CutPrefix(o.str("$ref"), "#/")
	if !ok {
		return o
	}
	var cur any = rd.root
	for _, seg := range strings.Split(r, "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := cur.(*omap)
		if !ok {
			return nil
		}
		cur = m.get(seg)
	}
	return rd.resolve(cur, depth+1)
}

// securityNames lists the schemes of a security requirement list.
func securityNames(reqs []any) []string {
	var out []string
	for _, r := range reqs {
		if m, ok := r.(*omap); ok {
			out = append(out, strings.Join(m.names(), " and "))
		}
	}
	return out
}

func schemaAnchor(name string) string { return "schema-" + anchorOf(name) }

// anchorOf makes an id of letters, digits and dashes.
func anchorOf(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func cap1(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	default:
		return fmt.Sprint(x)
	}
}

// omap is a JSON object that keeps its keys' order.
type omap struct {
	keys []string
	vals map[string]any
}

func (o *omap) get(k string) any {
	if o == nil {
		return nil
	}
	return o.vals[k]
}

// names returns the keys in the document's order; none for nil.
func (o *omap) names() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

func (o *omap) obj(k string) *omap { m, _ := o.get(k).(*omap); return m }
func (o *omap) str(k string) string {
	s, _ := o.get(k).(string)
	return s
}
func (o *omap) bool(k string) bool { b, _ := o.get(k).(bool); return b }
func (o *omap) arr(k string) []any { a, _ := o.get(k).([]any); return a }

// decodeOrdered reads one JSON value: objects as *omap, arrays as []any,
// numbers as json.Number.
func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > maxReferenceDepth {
		return nil, errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &omap{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// referencePage serves the API reference, to anyone.
func (d *Dashboard) referencePage(w http.ResponseWriter, r *http.Request) {
	if d.reference == nil {
		d.fail(w, r, http.StatusNotFound, "There is no API reference on this deployment.")
		return
	}
	ref := *d.reference
	ref.JSONPath = d.cfg.OpenAPIPath
	d.render(w, r, http.StatusOK, "reference", page{Title: "API reference", Nav: "reference", Data: ref})
}
