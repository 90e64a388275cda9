-- A shop's pages carry a product (schema.org Product/Offer: price, stock,
-- SKU…), kept as the JSON the extractor read, '' on other pages; the
-- search filters on price and stock read it with json_extract, over the
-- product pages alone (documents_product). A multilingual site's pages
-- carry their translations ([{"lang", "url"}], from hreflang), and search
-- asks which languages the site has (documents_lang) before ranking a
-- language first.
ALTER TABLE documents ADD COLUMN product TEXT NOT NULL DEFAULT '';
ALTER TABLE documents ADD COLUMN translations TEXT NOT NULL DEFAULT '[]';
CREATE INDEX documents_product ON documents(id) WHERE product <> '';
CREATE INDEX documents_lang ON documents(lang);
