;; No sections at all: Instrument must make the type, import and global
;; sections.
(module)
