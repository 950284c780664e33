; Tags for Java. Capture contract: see python-tags.scm.

[
  (class_declaration name: (identifier) @name.definition.class)
  (record_declaration name: (identifier) @name.definition.class)
  (enum_declaration name: (identifier) @name.definition.class)
] @definition.class

[
  (interface_declaration name: (identifier) @name.definition.interface)
  (annotation_type_declaration name: (identifier) @name.definition.interface)
] @definition.interface

[
  (method_declaration name: (identifier) @name.definition.method)
  (constructor_declaration name: (identifier) @name.definition.method)
  (compact_constructor_declaration name: (identifier) @name.definition.method)
] @definition.method

(method_invocation name: (identifier) @name.reference.call) @reference.call

(object_creation_expression
  type: [
    (type_identifier) @name.reference.call
    (generic_type (type_identifier) @name.reference.call)
    (scoped_type_identifier (type_identifier) @name.reference.call .)
  ]) @reference.call
