package openapi

import (
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Message returns a reference to the schema of the JSON that
// protojson writes for messages of md, defining it (and the messages it
// holds) in c under their full names ("cup.v1alpha1.WriteResult") unless
// c holds those names already: a component defined before stands for the
// message. Fields are optional, as protojson leaves out zero values;
// 64-bit integers are strings, enums their value names, and the
// well-known types their JSON forms.
func Message(md protoreflect.MessageDescriptor, c Components) map[string]any {
	if s, ok := wellKnown(md.FullName()); ok {
		return s
	}
	name := string(md.FullName())
	if _, ok := c[name]; ok {
		return Ref(name)
	}
	c[name] = nil // reserved: a message may hold itself
	props := map[string]any{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		props[fd.JSONName()] = field(fd, c)
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(props) == 0 {
		delete(s, "properties")
	}
	c[name] = s
	return Ref(name)
}

// field is the schema of one field's JSON.
func field(fd protoreflect.FieldDescriptor, c Components) map[string]any {
	switch {
	case fd.IsMap():
		return map[string]any{"type": "object", "additionalProperties": single(fd.MapValue(), c)}
	case fd.IsList():
		return map[string]any{"type": "array", "items": single(fd, c)}
	}
	return single(fd, c)
}

// single is the schema of one value of fd's kind.
func single(fd protoreflect.FieldDescriptor, c Components) map[string]any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer", "format": "int32"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer", "format": "int64", "minimum": 0}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "string", "format": "int64"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.StringKind:
		return map[string]any{"type": "string"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "format": "byte"}
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		names := make([]any, values.Len())
		for i := range values.Len() {
			names[i] = string(values.Get(i).Name())
		}
		return map[string]any{"type": "string", "enum": names}
	}
	return Message(fd.Message(), c)
}

// wellKnown are the schemas of the well-known types' JSON forms.
func wellKnown(n protoreflect.FullName) (map[string]any, bool) {
	switch n {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration", "google.protobuf.FieldMask":
		return map[string]any{"type": "string"}, true
	case "google.protobuf.Struct", "google.protobuf.Any":
		return map[string]any{"type": "object", "additionalProperties": true}, true
	case "google.protobuf.Value":
		return map[string]any{}, true
	case "google.protobuf.ListValue":
		return map[string]any{"type": "array", "items": map[string]any{}}, true
	case "google.protobuf.Empty":
		return map[string]any{"type": "object"}, true
	case "google.protobuf.BoolValue":
		return map[string]any{"type": "boolean"}, true
	case "google.protobuf.StringValue":
		return map[string]any{"type": "string"}, true
	case "google.protobuf.BytesValue":
		return map[string]any{"type": "string", "format": "byte"}, true
	case "google.protobuf.Int32Value", "google.protobuf.UInt32Value":
		return map[string]any{"type": "integer"}, true
	case "google.protobuf.Int64Value", "google.protobuf.UInt64Value":
		return map[string]any{"type": "string", "format": "int64"}, true
	case "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		return map[string]any{"type": "number"}, true
	}
	return nil, false
}
