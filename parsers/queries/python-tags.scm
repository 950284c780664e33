; Tags for Python. Capture contract (see parsers/symbols.py):
;   @name.definition.<kind> / @definition.<kind>  a definition's name / whole node
;   @name.reference.call / @reference.call        a call's callee name / whole call
; Decorated definitions are matched twice; the wider node wins, so a changed
; decorator line resolves to the function it decorates.

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(decorated_definition
  definition: (class_definition
    name: (identifier) @name.definition.class)) @definition.class

(function_definition
  name: (identifier) @name.definition.function) @definition.function

(decorated_definition
  definition: (function_definition
    name: (identifier) @name.definition.function)) @definition.function

(call
  function: [
    (identifier) @name.reference.call
    (attribute attribute: (identifier) @name.reference.call)
  ]) @reference.call
