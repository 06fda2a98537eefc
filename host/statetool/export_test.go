package statetool

// ImportBatch is importBatch, for the external tests.
const ImportBatch = importBatch
