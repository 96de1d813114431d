// Package catalog turns OpenAPI documents into actions. An imported
// document becomes a catalog: a file under <home>/catalogs/<name>.json
// holding the document's operations in a normalized form (name, method,
// path, parameters, input and output JSON Schemas, safety tier, security),
// the base URL calls go to, the credentials to send (as $NAME environment
// references only) and a copy of the source document. Each operation of
// an enabled catalog is the action <catalog>.<operation>: it checks its
// input against the schema and sends one HTTP request.
//
// Documents are read by the package itself (no OpenAPI library): JSON or
// YAML is decoded into plain data (decode.go), a Swagger 2.0 document is
// converted to the OpenAPI 3 form (swagger.go), the parts a catalog reads
// are typed (openapi.go) while schemas stay data, local $refs are
// followed as they are met (ref.go), and departures from the
// specification become warnings (lint.go). OpenAPI 3.0 and 3.1 documents
// are read as they are.
// Limits: one document per catalog (a $ref to another file or URL is
// refused); request bodies are JSON or form-urlencoded (operations with
// other bodies are skipped with a warning); cookie parameters are
// skipped; a schema's recursion is cut where it repeats (the inner level
// accepts any value).
package catalog
