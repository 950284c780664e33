; Tags for Go. Capture contract: see python-tags.scm; @qualifier is the
; receiver type, so `func (s *Server) Serve()` is named `Server.Serve`.

(function_declaration name: (identifier) @name.definition.function) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @qualifier
        (pointer_type (type_identifier) @qualifier)
        (generic_type type: (type_identifier) @qualifier)
        (pointer_type (generic_type type: (type_identifier) @qualifier))
      ]))
  name: (field_identifier) @name.definition.method) @definition.method

(type_spec name: (type_identifier) @name.definition.class type: (struct_type)) @definition.class

(type_spec name: (type_identifier) @name.definition.interface type: (interface_type)) @definition.interface

(method_elem name: (field_identifier) @name.definition.method) @definition.method

(call_expression
  function: [
    (identifier) @name.reference.call
    (selector_expression field: (field_identifier) @name.reference.call)
  ]) @reference.call
