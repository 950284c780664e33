; Tags for C++. Capture contract: see python-tags.scm; @qualifier is the class
; of an out-of-line definition, so `void Foo::bar() {}` is named `Foo.bar`.
; Namespaces qualify like classes (`ns.Foo.bar`).

(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name.definition.function))
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name.definition.function))
  ]) @definition.function

(function_definition
  declarator: [
    (function_declarator declarator: (qualified_identifier
      scope: (_) @qualifier name: [(identifier) (destructor_name) (operator_name)] @name.definition.method))
    (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier
      scope: (_) @qualifier name: [(identifier) (operator_name)] @name.definition.method)))
    (reference_declarator (function_declarator declarator: (qualified_identifier
      scope: (_) @qualifier name: [(identifier) (operator_name)] @name.definition.method)))
  ]) @definition.method

[
  (class_specifier name: (type_identifier) @name.definition.class body: (_))
  (struct_specifier name: (type_identifier) @name.definition.class body: (_))
  (union_specifier name: (type_identifier) @name.definition.class body: (_))
] @definition.class

(enum_specifier name: (type_identifier) @name.definition.enum body: (_)) @definition.enum

(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name.definition.namespace) @definition.namespace

(type_definition declarator: (type_identifier) @name.definition.type) @definition.type

(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
    (qualified_identifier name: (identifier) @name.reference.call)
    (template_function name: (identifier) @name.reference.call)
  ]) @reference.call
