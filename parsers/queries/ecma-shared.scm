; Tags JavaScript and TypeScript share (their grammars name these nodes alike): functions
; bound to names, and calls. Included by javascript-tags.scm and typescript-tags.scm.

(lexical_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(expression_statement
  (assignment_expression
    left: [
      (identifier) @name.definition.function
      (member_expression property: (property_identifier) @name.definition.function)
    ]
    right: [(arrow_function) (function_expression)])) @definition.function

(pair
  key: [(property_identifier) (string)] @name.definition.function
  value: [(arrow_function) (function_expression)]) @definition.function

(call_expression
  function: [
    (identifier) @name.reference.call
    (member_expression property: [(property_identifier) (private_property_identifier)] @name.reference.call)
  ]) @reference.call

(new_expression
  constructor: [
    (identifier) @name.reference.call
    (member_expression property: (property_identifier) @name.reference.call)
  ]) @reference.call
