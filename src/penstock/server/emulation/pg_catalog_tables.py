"""The columns of the emulated system catalogs, as PostgreSQL 15 names them, and the
catalogs whose rows do not depend on the server's tables.

Clients select catalog columns by name and compare them with literals, so every column a
client may read exists, in a type that compares like PostgreSQL's: oid, xid and regproc
become int64 (regproc: text, its name), name/char/pg_node_tree text, int2vector/oidvector
and arrays Arrow lists. Rows are dicts; a column a row leaves out takes its type's
default (0, false, NULL), which is what PostgreSQL has there for a plain table.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from penstock.server.settings import DEFAULTS

PG_CATALOG_OID, PUBLIC_OID, INFORMATION_SCHEMA_OID = 11, 2200, 13000
OWNER_OID = 10  # the one role that owns everything
DEFAULT_COLLATION, C_COLLATION, POSIX_COLLATION = 100, 950, 951
HEAP_AM = 2

_ARROW: dict[str, pa.DataType] = {
    "oid": pa.int64(), "xid": pa.int64(), "int8": pa.int64(), "int4": pa.int32(), "int2": pa.int16(),
    "float4": pa.float32(), "float8": pa.float64(), "bool": pa.bool_(), "name": pa.string(), "text": pa.string(),
    "char": pa.string(), "regproc": pa.string(), "node": pa.string(), "bytea": pa.binary(),
    "timestamptz": pa.timestamp("us", "UTC"), "text[]": pa.list_(pa.string()), "acl": pa.list_(pa.string()),
    "char[]": pa.list_(pa.string()), "int2v": pa.list_(pa.int16()), "int2[]": pa.list_(pa.int16()),
    "oidv": pa.list_(pa.int64()), "oid[]": pa.list_(pa.int64()),
}
_DEFAULT: dict[str, Any] = {"oid": 0, "xid": 0, "int8": 0, "int4": 0, "int2": 0, "float4": 0.0, "float8": 0.0,
                            "bool": False}


def _spec(text: str) -> list[tuple[str, str]]:
    return [tuple(item.split(":")) for item in text.split()]  # type: ignore[misc]


COLUMNS: dict[str, list[tuple[str, str]]] = {name: _spec(text) for name, text in {
    "pg_namespace": "oid:oid nspname:name nspowner:oid nspacl:acl",
    "pg_class": "oid:oid relname:name relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid "
                "relfilenode:oid reltablespace:oid relpages:int4 reltuples:float4 relallvisible:int4 "
                "reltoastrelid:oid relhasindex:bool relisshared:bool relpersistence:char relkind:char relnatts:int2 "
                "relchecks:int2 relhasrules:bool relhastriggers:bool relhassubclass:bool relrowsecurity:bool "
                "relforcerowsecurity:bool relispopulated:bool relreplident:char relispartition:bool relrewrite:oid "
                "relfrozenxid:xid relminmxid:xid relacl:acl reloptions:text[] relpartbound:node",
    "pg_attribute": "attrelid:oid attname:name atttypid:oid attstattarget:int4 attlen:int2 attnum:int2 "
                    "attndims:int4 attcacheoff:int4 atttypmod:int4 attbyval:bool attalign:char attstorage:char "
                    "attcompression:char attnotnull:bool atthasdef:bool atthasmissing:bool attidentity:char "
                    "attgenerated:char attisdropped:bool attislocal:bool attinhcount:int4 attcollation:oid "
                    "attacl:acl attoptions:text[] attfdwoptions:text[] attmissingval:text",
    "pg_type": "oid:oid typname:name typnamespace:oid typowner:oid typlen:int2 typbyval:bool typtype:char "
               "typcategory:char typispreferred:bool typisdefined:bool typdelim:char typrelid:oid "
               "typsubscript:regproc typelem:oid typarray:oid typinput:regproc typoutput:regproc "
               "typreceive:regproc typsend:regproc typmodin:regproc typmodout:regproc typanalyze:regproc "
               "typalign:char typstorage:char typnotnull:bool typbasetype:oid typtypmod:int4 typndims:int4 "
               "typcollation:oid typdefaultbin:node typdefault:text typacl:acl",
    "pg_database": "oid:oid datname:name datdba:oid encoding:int4 datlocprovider:char datistemplate:bool "
                   "datallowconn:bool datconnlimit:int4 datfrozenxid:xid datminmxid:xid dattablespace:oid "
                   "datcollate:text datctype:text daticulocale:text datcollversion:text datacl:acl",
    "pg_attrdef": "oid:oid adrelid:oid adnum:int2 adbin:node",
    "pg_collation": "oid:oid collname:name collnamespace:oid collowner:oid collprovider:char "
                    "collisdeterministic:bool collencoding:int4 collcollate:text collctype:text colliculocale:text "
                    "collversion:text",
    "pg_description": "objoid:oid classoid:oid objsubid:int4 description:text",
    "pg_shdescription": "objoid:oid classoid:oid description:text",
    "pg_index": "indexrelid:oid indrelid:oid indnatts:int2 indnkeyatts:int2 indisunique:bool "
                "indnullsnotdistinct:bool indisprimary:bool indisexclusion:bool indimmediate:bool "
                "indisclustered:bool indisvalid:bool indcheckxmin:bool indisready:bool indislive:bool "
                "indisreplident:bool indkey:int2v indcollation:oidv indclass:oidv indoption:int2v indexprs:node "
                "indpred:node",
    "pg_constraint": "oid:oid conname:name connamespace:oid contype:char condeferrable:bool condeferred:bool "
                     "convalidated:bool conrelid:oid contypid:oid conindid:oid conparentid:oid confrelid:oid "
                     "confupdtype:char confdeltype:char confmatchtype:char conislocal:bool coninhcount:int4 "
                     "connoinherit:bool conkey:int2[] confkey:int2[] conpfeqop:oid[] conppeqop:oid[] "
                     "conffeqop:oid[] confdelsetcols:int2[] conexclop:oid[] conbin:node",
    "pg_inherits": "inhrelid:oid inhparent:oid inhseqno:int4 inhdetachpending:bool",
    "pg_trigger": "oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid tgtype:int2 tgenabled:char "
                  "tgisinternal:bool tgconstrrelid:oid tgconstrindid:oid tgconstraint:oid tgdeferrable:bool "
                  "tginitdeferred:bool tgnargs:int2 tgattr:int2v tgargs:bytea tgqual:node tgoldtable:name "
                  "tgnewtable:name",
    "pg_rewrite": "oid:oid rulename:name ev_class:oid ev_type:char ev_enabled:char is_instead:bool ev_qual:node "
                  "ev_action:node",
    "pg_policy": "oid:oid polname:name polrelid:oid polcmd:char polpermissive:bool polroles:oid[] polqual:node "
                 "polwithcheck:node",
    "pg_statistic_ext": "oid:oid stxrelid:oid stxname:name stxnamespace:oid stxowner:oid stxstattarget:int4 "
                        "stxkeys:int2v stxkind:char[] stxexprs:node",
    "pg_publication": "oid:oid pubname:name pubowner:oid puballtables:bool pubinsert:bool pubupdate:bool "
                      "pubdelete:bool pubtruncate:bool pubviaroot:bool",
    "pg_publication_rel": "oid:oid prpubid:oid prrelid:oid prqual:node prattrs:int2v",
    "pg_publication_namespace": "oid:oid pnpubid:oid pnnspid:oid",
    "pg_foreign_table": "ftrelid:oid ftserver:oid ftoptions:text[]",
    "pg_partitioned_table": "partrelid:oid partstrat:char partnatts:int2 partdefid:oid partattrs:int2v "
                            "partclass:oidv partcollation:oidv partexprs:node",
    "pg_sequence": "seqrelid:oid seqtypid:oid seqstart:int8 seqincrement:int8 seqmax:int8 seqmin:int8 "
                   "seqcache:int8 seqcycle:bool",
    "pg_depend": "classid:oid objid:oid objsubid:int4 refclassid:oid refobjid:oid refobjsubid:int4 deptype:char",
    "pg_enum": "oid:oid enumtypid:oid enumsortorder:float4 enumlabel:name",
    "pg_range": "rngtypid:oid rngsubtype:oid rngmultitypid:oid rngcollation:oid rngsubopc:oid "
                "rngcanonical:regproc rngsubdiff:regproc",
    "pg_extension": "oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:bool extversion:text "
                    "extconfig:oid[] extcondition:text[]",
    "pg_am": "oid:oid amname:name amhandler:regproc amtype:char",
    "pg_opclass": "oid:oid opcmethod:oid opcname:name opcnamespace:oid opcowner:oid opcfamily:oid opcintype:oid "
                  "opcdefault:bool opckeytype:oid",
    "pg_tablespace": "oid:oid spcname:name spcowner:oid spcacl:acl spcoptions:text[]",
    "pg_proc": "oid:oid proname:name pronamespace:oid proowner:oid prolang:oid procost:float4 prorows:float4 "
               "provariadic:oid prosupport:regproc prokind:char prosecdef:bool proleakproof:bool proisstrict:bool "
               "proretset:bool provolatile:char proparallel:char pronargs:int2 pronargdefaults:int2 "
               "prorettype:oid proargtypes:oidv proallargtypes:oid[] proargmodes:char[] proargnames:text[] "
               "proargdefaults:node protrftypes:oid[] prosrc:text probin:text prosqlbody:node proconfig:text[] "
               "proacl:acl",
    "pg_roles": "rolname:name rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool "
                "rolcanlogin:bool rolreplication:bool rolconnlimit:int4 rolpassword:text rolvaliduntil:timestamptz "
                "rolbypassrls:bool rolconfig:text[] oid:oid",
    "pg_authid": "oid:oid rolname:name rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool "
                 "rolcanlogin:bool rolreplication:bool rolbypassrls:bool rolconnlimit:int4 rolpassword:text "
                 "rolvaliduntil:timestamptz",
    "pg_user": "usename:name usesysid:oid usecreatedb:bool usesuper:bool userepl:bool usebypassrls:bool "
               "passwd:text valuntil:timestamptz useconfig:text[]",
    "pg_auth_members": "oid:oid roleid:oid member:oid grantor:oid admin_option:bool",
    "pg_settings": "name:text setting:text unit:text category:text short_desc:text extra_desc:text context:text "
                   "vartype:text source:text min_val:text max_val:text enumvals:text[] boot_val:text "
                   "reset_val:text sourcefile:text sourceline:int4 pending_restart:bool",
    "pg_tables": "schemaname:name tablename:name tableowner:name tablespace:name hasindexes:bool hasrules:bool "
                 "hastriggers:bool rowsecurity:bool",
    "pg_views": "schemaname:name viewname:name viewowner:name definition:text",
    "pg_matviews": "schemaname:name matviewname:name matviewowner:name tablespace:name hasindexes:bool "
                   "ispopulated:bool definition:text",
    "pg_indexes": "schemaname:name tablename:name indexname:name tablespace:name indexdef:text",
    "pg_stat_activity": "datid:oid datname:name pid:int4 usesysid:oid usename:name application_name:text "
                        "client_addr:text client_port:int4 state:text query:text backend_type:text",
}.items()}

# Which catalogs are views in PostgreSQL (relkind 'v'); the rest are tables ('r').
VIEWS = {"pg_roles", "pg_user", "pg_settings", "pg_tables", "pg_views", "pg_matviews", "pg_indexes",
         "pg_stat_activity"}


def schema_of(columns: list[tuple[str, str]]) -> pa.Schema:
    return pa.schema([pa.field(name, _ARROW[kind]) for name, kind in columns])


def make_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """A catalog's rows as an Arrow table; unnamed columns take their type's default."""
    columns = COLUMNS[name]
    unknown = {k for row in rows for k in row} - {c for c, _ in columns}
    assert not unknown, f"{name} has no columns {unknown}"
    data = {col: pa.array([row.get(col, _DEFAULT.get(kind)) for row in rows], _ARROW[kind]) for col, kind in columns}
    return pa.table(data, schema=schema_of(columns))


# -- catalogs that do not depend on the server's tables --------------------------------------

# Catalogs with no rows, whatever the server's tables: penstock has no defaults, indexes,
# constraints, inheritance, triggers, rules, policies, publications, sequences or types of
# its own. rewrite_empty.py answers some queries on them without planning them.
ALWAYS_EMPTY = frozenset({
    "pg_attrdef", "pg_shdescription", "pg_index", "pg_constraint", "pg_inherits", "pg_trigger", "pg_rewrite",
    "pg_policy", "pg_statistic_ext", "pg_publication", "pg_publication_rel", "pg_publication_namespace",
    "pg_foreign_table", "pg_partitioned_table", "pg_sequence", "pg_depend", "pg_enum", "pg_range", "pg_extension",
    "pg_auth_members", "pg_views", "pg_matviews", "pg_indexes", "pg_proc", "pg_opclass"})


def static_tables() -> dict[str, pa.Table]:
    empty = {name: make_table(name, []) for name in ALWAYS_EMPTY | {"pg_description", "pg_stat_activity"}}
    return {**empty,
            "pg_namespace": make_table("pg_namespace", [
                {"oid": PG_CATALOG_OID, "nspname": "pg_catalog", "nspowner": OWNER_OID},
                {"oid": PUBLIC_OID, "nspname": "public", "nspowner": OWNER_OID},
                {"oid": INFORMATION_SCHEMA_OID, "nspname": "information_schema", "nspowner": OWNER_OID}]),
            "pg_am": make_table("pg_am", [
                {"oid": oid, "amname": name, "amhandler": handler, "amtype": kind} for oid, name, handler, kind in [
                    (HEAP_AM, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i"),
                    (405, "hash", "hashhandler", "i"), (783, "gist", "gisthandler", "i"),
                    (2742, "gin", "ginhandler", "i"), (4000, "spgist", "spghandler", "i"),
                    (3580, "brin", "brinhandler", "i")]]),
            "pg_collation": make_table("pg_collation", [
                {"oid": oid, "collname": name, "collnamespace": PG_CATALOG_OID, "collowner": OWNER_OID,
                 "collprovider": provider, "collisdeterministic": True, "collencoding": encoding,
                 "collcollate": collate, "collctype": collate} for oid, name, provider, encoding, collate in [
                    (DEFAULT_COLLATION, "default", "d", -1, None), (C_COLLATION, "C", "c", -1, "C"),
                    (POSIX_COLLATION, "POSIX", "c", -1, "POSIX")]]),
            "pg_tablespace": make_table("pg_tablespace", [
                {"oid": 1663, "spcname": "pg_default", "spcowner": OWNER_OID},
                {"oid": 1664, "spcname": "pg_global", "spcowner": OWNER_OID}]),
            "pg_settings": make_table("pg_settings", [
                {"name": name, "setting": value, "category": "penstock", "short_desc": "", "context": "user",
                 "vartype": "string", "source": "default", "boot_val": value, "reset_val": value,
                 "pending_restart": False} for name, value in sorted(DEFAULTS.items())]),
            }


def database_rows(names: list[str], oid_of: dict[str, int]) -> pa.Table:
    return make_table("pg_database", [
        {"oid": oid_of[name], "datname": name, "datdba": OWNER_OID, "encoding": 6, "datlocprovider": "c",
         "datallowconn": True, "datconnlimit": -1, "dattablespace": 1663, "datcollate": "C", "datctype": "C"}
        for name in names])


def role_tables(users: dict[str, int]) -> dict[str, pa.Table]:
    """pg_roles, pg_authid and pg_user: the owner role and every user seen so far. penstock
    has no privileges to speak of: every user may read every table."""
    roles = [{"oid": oid, "rolname": name, "rolsuper": oid == OWNER_OID, "rolinherit": True,
              "rolcanlogin": True, "rolconnlimit": -1} for name, oid in sorted(users.items(), key=lambda x: x[1])]
    return {
        "pg_roles": make_table("pg_roles", [dict(r, rolpassword="********") for r in roles]),
        "pg_authid": make_table("pg_authid", roles),
        "pg_user": make_table("pg_user", [{"usename": r["rolname"], "usesysid": r["oid"], "usesuper": r["rolsuper"],
                                           "passwd": "********"} for r in roles]),
    }
