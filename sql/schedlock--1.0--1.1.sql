/* sql/schedlock--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedlock UPDATE TO '1.1'" to load this file. \quit

/*
 * Release 1.1.  schedlock ships no separate schedlock--1.1.sql: CREATE
 * EXTENSION schedlock runs schedlock--1.0.sql and then this script, so a
 * fresh 1.1 installation and an upgraded 1.0 one are made by the same
 * statements.  test/t/006_upgrade.pl checks that they end up identical.
 *
 * Every statement is schema-qualified; the script runs with the search_path
 * CREATE/ALTER EXTENSION sets (the extension's schema, then pg_temp).
 */
