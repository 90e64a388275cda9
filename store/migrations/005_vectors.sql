-- Optional hybrid retrieval: one embedding per chunk, computed from the
-- chunk's raw text behind a contextual header (title, URL, heading path,
-- type). The raw text stays in chunks; only the vector is kept here.
--
-- A plain table, not a vec0 virtual table: vec0 fixes the dimension when
-- the table is created, while the model (and so the dimension) is
-- configuration that can change; and vec0's KNN cannot apply the search
-- filters' joins before choosing its k nearest, so a filtered search
-- would lose hits. sqlite-vec's vec_distance_cosine() scans the rows the
-- filters leave instead.
--
-- input_hash is the sha256 of the embedded input: a vector is only stored
-- when the chunk still produces that input (chunk ids are reused after a
-- re-index). The model the vectors came from is meta.embedding_model.
CREATE TABLE chunk_vectors (
	chunk_id   INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
	input_hash TEXT NOT NULL,
	embedding  BLOB NOT NULL
);
