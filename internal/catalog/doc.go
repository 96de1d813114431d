// Package catalog turns OpenAPI documents into actions. An imported
// document becomes a catalog: a file under <home>/catalogs/<name>.json
// holding the document's operations in a normalized form (name, method,
// path, parameters, input and output JSON Schemas, safety tier, security),
// the base URL calls go to, the credentials to send (as $NAME environment
// references only) and a copy of the source document. Each operation of
// an enabled catalog is the action <catalog>.<operation>: it checks its
// input against the schema and sends one HTTP request.
//
// Documents are read by kin-openapi (parse.go): its loader reads OpenAPI
// 3.0 and 3.1 and resolves local $refs (it is never allowed to read a file
// or a URL), openapi2conv converts Swagger 2.0 to OpenAPI 3. Before the
// library sees a document, bounds.go refuses one that nests too deep or
// whose YAML aliases expand too far. openapi.go takes what a catalog reads
// from the library's model, schema.go converts its schemas, and
// departures from the specification become warnings (lint.go).
// Limits: one document per catalog (a $ref to another file or URL is
// refused); request bodies are JSON or form-urlencoded (operations with
// other bodies are skipped with a warning); cookie parameters are
// skipped; a schema's recursion is cut where it repeats (the inner level
// accepts any value).
package catalog
