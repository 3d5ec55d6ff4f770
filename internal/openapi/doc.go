// Package openapi builds the parts of OpenAPI 3.0 documents that do not
// depend on the server: schemas translated from the JSON Schemas of
// resource definitions ([Convert]) and from protobuf messages, in
// protojson's form ([Message]). The server assembles the documents from
// them (server/openapi.go).
package openapi
