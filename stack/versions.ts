/** The server versions every part of the project runs and tests against (docker-compose.yml pins the same). */
export const KAFKA_VERSION = '3.9.2';
export const ELASTICSEARCH_VERSION = '8.19.21';
